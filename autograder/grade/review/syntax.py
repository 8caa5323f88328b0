"""A notebook cell as IPython reads it, for review/flags.py: its IPython syntax set aside the way
IPython's input transformers do, and a word search for cells that are not Python.

IPython turns ``%magic``, ``%%cell`` magics, ``!shell``, ``x = !cmd``, ``x = %magic``,
``obj?`` and the ``,f a b``/``;f a b``/``/f a b`` calls into Python before the kernel
runs a cell (IPython/core/inputtransformer2.py). ``read_cell`` does the same in a single
pass over the cell: it strips leading blank lines and the common indent, follows strings,
brackets, comments and backslash continuations to know where a logical line starts (only
there is ``%`` a magic), and returns the cell's Python with each magic replaced by
``pass`` (same line count, so line numbers still match the cell) and the magics apart.
IPython's own transformer is not used: it re-tokenises the whole cell once per magic,
quadratic in the number of magics (300 magic lines take 2 s, 1,000 take 10 s).

Every scan here is linear in the text: no regular expression that can backtrack over
more than one line, no search started again from each position.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from .rules import (
    ATTRIBUTES,
    CODE_FILES,
    CODE_MAGICS,
    FILE_MAGICS,
    HIDDEN,
    KERNEL,
    NAMES,
    PROCESS,
    PYTHON_SCRIPTS,
    RUNNERS,
    RUNS_FILES,
    STRINGS,
    dotted_kind,
    magic_kind,
    module_kind,
    show,
)

ESCAPES = frozenset("!%?,;/")  # what starts an IPython command at a logical line's start
OPERATOR_END = frozenset("=!<>:+-*/%&|^@~")  # a character before "=" in ==, +=, <=...
CELL_MAGIC_HELP = re.compile(r"%%\w+\?")  # %%bash? asks for help (anchored, one line)


@dataclass
class Magic:
    """One piece of IPython syntax at ``line``: ``%%`` (a cell magic, with its ``body``),
    ``%`` (a line magic), ``!`` (shell) or ``?`` (help: ``args`` is what it asks about)."""

    line: int
    escape: str
    name: str
    args: str
    body: str = ""
    body_line: int = 0


@dataclass
class Reading:
    """A cell's Python (magics replaced by ``pass``) and its magics."""

    python: str
    magics: list[Magic] = field(default_factory=list)


def read_cell(source: str) -> list[Reading]:
    """The cell as IPython would run it; a second reading when it holds ``>>>`` or
    ``In [1]:`` prompts (which IPython strips under rules of its own): both are reviewed."""
    lines = source.splitlines(keepends=True)
    skip = 0
    while skip < len(lines) and not lines[skip].strip():
        skip += 1
    first = 1 + _newlines("".join(lines[:skip]))
    lines = textwrap.dedent("".join(lines[skip:])).splitlines(keepends=True)
    readings = [_read(lines, first)]
    stripped = _strip_prompts(lines)
    if stripped is not None:
        readings.append(_read(stripped, first))
    return readings


def _newlines(text: str) -> int:
    """Lines Python counts in ``text`` (\\n, \\r\\n and \\r end a line)."""
    return text.count("\n") + text.count("\r") - text.count("\r\n")


def _ending(line: str) -> str:
    return line[len(line.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")) :]


def _prompt(line: str) -> tuple[int, str]:
    """(how long the prompt that starts ``line`` is, which: ``>>>``, ``...`` or ``In``)."""
    body = line.lstrip(" \t")
    indent = len(line) - len(body)
    for mark in (">>>", "..."):
        if body.startswith(mark) and body[3:4] in (" ", "\t", "\n", "\r", ""):
            return indent + 3 + (body[3:4] in (" ", "\t")), mark
    close = body.find("]: ", 4, 30)
    if body.startswith("In [") and close > 4 and body[4:close].isdigit():
        return indent + close + 3, "In"
    dots = len(body) - len(body.lstrip("."))
    if dots >= 3 and body[dots : dots + 1] == ":":
        return indent + dots + 1 + (body[dots + 1 : dots + 2] == " "), "In"
    return 0, ""


def _strip_prompts(lines: list[str]) -> list[str] | None:
    """``lines`` without their prompts if IPython would strip them: a ``>>>`` line, or an
    ``In [n]:``/``...:`` prompt on one of the first two lines."""
    prompts = [_prompt(line) for line in lines]
    if not any(kind == ">>>" for _, kind in prompts) and not any(
        kind == "In" for _, kind in prompts[:2]
    ):
        return None
    text = "".join(line[cut:] for line, (cut, _) in zip(lines, prompts, strict=True))
    return textwrap.dedent(text).splitlines(keepends=True)


class _Lines:
    """Where strings, brackets and backslash continuations leave a physical line."""

    def __init__(self):
        self.depth, self.quote, self.continued, self.assigned = 0, "", False, False

    @property
    def at_start(self) -> bool:
        return not (self.depth or self.quote or self.continued)

    def scan(self, line: str) -> tuple[int, str, bool]:
        """Scan one line: (column of the logical line's first ``=`` at depth 0 if on this
        line else -1, its last character outside strings and comments, commented)."""
        i, n, last, assign = 0, len(line), "", -1
        while i < n:
            c = line[i]
            if self.quote:
                if c == "\\":
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote, last = "", c
                    continue
                if c in "\r\n" and len(self.quote) == 1:  # an unclosed '...' ends here
                    self.quote = ""
                i += 1
                continue
            if c == "#":
                self.continued = False
                return assign, last, True
            if c in "'\"":
                self.quote = c * 3 if line.startswith(c * 3, i) else c
                i += len(self.quote)
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            elif c == "=" and not self.depth and not self.assigned:
                if line[i + 1 : i + 2] == "=":
                    i, last = i + 2, "="
                    continue
                if i == 0 or line[i - 1] not in OPERATOR_END:
                    self.assigned, assign = True, i
            if not c.isspace():
                last = c
            i += 1
        self.continued = not self.quote and line.rstrip("\r\n").endswith("\\")
        return assign, last, False


def _read(lines: list[str], first: int) -> Reading:
    numbers, n = [], first
    for line in lines:
        numbers.append(n)
        n += _newlines(line)
    if lines and lines[0].startswith("%%") and not CELL_MAGIC_HELP.match(lines[0]):
        name, _, arg = lines[0][2:].rstrip().partition(" ")
        body_line = numbers[1] if len(lines) > 1 else numbers[0] + 1
        return Reading("", [Magic(numbers[0], "%%", name, arg, "".join(lines[1:]), body_line)])
    out: list[str] = []
    magics: list[Magic] = []
    state = _Lines()
    logical = k = 0
    while k < len(lines):
        line = lines[k]
        if state.at_start:
            logical, state.assigned = k, False
            body = line.lstrip(" \t\x0c")
            if body[:1] in ESCAPES:
                indent = line[: len(line) - len(body)]
                end = _continued_end(lines, k)
                text = _assemble(lines, k, len(indent), end)
                out.append(indent + _escaped(text, numbers[k], magics) + _ending(line))
                out.extend(_ending(lines[j]) for j in range(k + 1, end + 1))
                k = end + 1
                continue
        assign, last, commented = state.scan(line)
        rest = line[assign + 1 :].lstrip(" \t") if assign >= 0 else ""
        command = rest[:1] == "!" or (rest[:1] == "%" and (rest[1:2].isidentifier()))
        if command and not line.lstrip().startswith("="):
            col = len(line) - len(rest)
            end = _continued_end(lines, k)
            text = _assemble(lines, k, col, end)
            _escaped(text, numbers[k], magics)
            out.append(line[:col] + "None" + _ending(line))
            out.extend(_ending(lines[j]) for j in range(k + 1, end + 1))
            state = _Lines()
            k = end + 1
            continue
        out.append(line)
        if state.at_start and last == "?" and not commented:  # obj? asks for help
            content = "".join(lines[logical : k + 1])
            body = content.lstrip(" \t\x0c")
            indent = content[: len(content) - len(body)]
            target = _help_target(body.rstrip().rstrip("?"))
            magics.append(Magic(numbers[logical], "?", "pinfo", target))
            out[logical:] = [indent + _as_python(target) + _ending(lines[logical])] + [
                _ending(lines[j]) for j in range(logical + 1, k + 1)
            ]
        k += 1
    return Reading("".join(out), magics)


def _continued_end(lines: list[str], start: int) -> int:
    end = start
    while end + 1 < len(lines) and lines[end].endswith("\\\n"):
        end += 1
    return end


def _assemble(lines: list[str], start: int, col: int, end: int) -> str:
    parts = [lines[start][col:], *lines[start + 1 : end + 1]]
    return " ".join([p.rstrip()[:-1] for p in parts[:-1]] + [parts[-1].rstrip()])


def _escaped(text: str, line: int, magics: list[Magic]) -> str:
    """The Python IPython runs for an escaped command (magics recorded apart)."""
    escape = text[:2] if text[:2] in ("!!", "??") else text[:1]
    content = text[len(escape) :]
    name, _, args = content.partition(" ")
    if escape in ("!", "!!"):
        magics.append(Magic(line, "!", "", content))
    elif escape == "%":
        magics.append(Magic(line, "%", name.lstrip("%"), args))
    elif escape in ("?", "??"):
        magics.append(Magic(line, "?", "pinfo", content))
        return _as_python(content)
    elif escape == ",":
        return '{}("{}")'.format(name, '", "'.join(args.split()))
    elif escape == ";":
        return f'{name}("{args}")'
    elif escape == "/":
        return f"{name}({', '.join(args.split())})" if name else text
    return "pass"


def _help_target(text: str) -> str:
    """What ``text?`` asks about: its last name, dotted or indexed (as IPython finds it)."""
    i = len(text)
    while i and (text[i - 1].isalnum() or text[i - 1] in "_.*[]-%"):
        i -= 1
    return text[i:]


def _as_python(target: str) -> str:
    """A help target as an expression to review (IPython looks its attributes up)."""
    target = target.strip().lstrip("%")
    parts = target.split(".")
    return target if parts and all(p.isidentifier() for p in parts) else "pass"


# ---- what a magic does -------------------------------------------------------------------

Found = tuple[int, str, str]  # (line of the cell, what, class)


def magic_flags(
    magic: Magic, written: set[str], line: int, inner: Callable[[str, int], list[Found]]
) -> list[Found]:
    """What to review in one magic at ``line``: the magic itself unless the course uses it
    (rules.magic_kind), and the code it runs (``%time``'s line, ``%%writefile``'s or
    ``%%python``'s body...), read by ``inner(code, first line)``. A file ``%%writefile``
    writes is added to ``written``; running or importing it later is flagged."""
    if magic.escape == "?":
        return []
    if magic.escape == "!":
        return [(line, "runs shell commands", PROCESS)]
    cell, name, args = magic.escape == "%%", magic.name, magic.args
    file = _file_arg(args) if name in FILE_MAGICS | RUNS_FILES else ""
    if name in FILE_MAGICS and file:
        written.update(modules_of(file))
    out: list[Found] = []
    kind = magic_kind(name, args)
    if kind:
        shown = f"{'%%' if cell else '%'}{show(name, 16)}" + (f" {show(file, 16)}" * bool(file))
        if name in RUNS_FILES and modules_of(file) & written:
            shown = f"{show(file, 16)}, written by the notebook"
        out.append((line, f"runs {shown}", kind))
    if name in CODE_MAGICS:
        out += inner(_code_args(args), magic.line)
    script = args.split()[0] if args.split() else ""
    if cell and (
        name in CODE_MAGICS | FILE_MAGICS | PYTHON_SCRIPTS
        or (name == "script" and "python" in script)
    ):
        out += inner(magic.body, magic.body_line)
    return out


def _code_args(args: str) -> str:
    """The code of ``%time``/``%timeit -n 10 ...``: the line without its options."""
    words = args.split(" ")
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if len(option) == 2 and option[1] in "nrplsTD" and words:
            words.pop(0)
    return " ".join(words)


def _file_arg(args: str) -> str:
    words = [w.strip("'\"") for w in args.split() if not w.startswith("-")]
    return words[0] if words else ""


def modules_of(path: str) -> set[str]:
    """The modules a file written at ``path`` can be imported as."""
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts:
        return set()
    out = {parts[0].split(".")[0]} if len(parts) > 1 else set()
    if parts[-1].endswith(CODE_FILES) or "." not in parts[-1]:
        out.add(parts[-1].split(".")[0])
    return out


# ---- cells that are not Python: a word search --------------------------------------------

TOKEN = re.compile(r"[^\W\d]\w*|\S")  # a word or one other character: linear


def text_flags(text: str, line0: int = 0) -> list[tuple[int, str, str]]:  # noqa: C901 (a branch per kind of word)
    """(line, what, class) found by reading ``text`` as words, for code that does not
    parse: imports, dotted names, the attribute names of the tables, calls of exec."""
    text = unicodedata.normalize("NFKC", text)
    found: list[tuple[int, str, str]] = []
    tokens = [(m.start(), m.group()) for m in TOKEN.finditer(text)]
    lines, line, at = [], line0 + 1, 0
    for offset, _ in tokens:  # the line of each token, in one pass
        line += _newlines(text[at:offset])
        at = offset
        lines.append(line)
    importing, module = False, ""  # in an import statement; the module of "from x import"
    i = 0
    while i < len(tokens):
        word, where = tokens[i][1], lines[i]
        if not word.isidentifier():
            importing = importing and word in ",.()" and where == lines[i - 1]
            i += 1
            continue
        parts, j = [word], i
        while j + 2 < len(tokens) and tokens[j + 1][1] == "." and tokens[j + 2][1].isidentifier():
            parts.append(tokens[j + 2][1])
            j += 2
        name = ".".join(parts)
        if word == "from":
            importing, module = True, tokens[i + 1][1] if i + 1 < len(tokens) else ""
        elif word == "import":
            importing = True
        elif importing and word != "as" and (i == 0 or tokens[i - 1][1] != "as"):
            kind = module_kind(name) or dotted_kind(f"{module}.{name}")
            if kind:
                found.append((where, f"imports {name[:40]}", kind))
        kind = dotted_kind(name)
        if kind:
            found.append((where, f"uses {name[:40]}", kind))
        for part in parts:
            kind = ATTRIBUTES.get(part) or NAMES.get(part)
            if kind:
                found.append((where, f"uses {part}", kind))
        if name in RUNNERS | {"__import__"} and j + 1 < len(tokens) and tokens[j + 1][1] == "(":
            found.append((where, f"calls {name}", HIDDEN))
        if parts[0] == "get_ipython":
            found.append((where, "uses get_ipython", KERNEL))
        if importing and where != lines[min(j + 1, len(tokens) - 1)]:
            importing = False
        i = j + 1
    for snippet, kind in STRINGS.items():
        at = text.find(snippet)
        if at >= 0:
            found.append((line0 + 1 + _newlines(text[:at]), f"mentions {snippet}", kind))
    return found
