"""Helpers for the course notebooks: the visible checks, drawing a graph of Values, and
the engine a lesson starts from.

Every assignment folder has this file beside its notebook. A check either returns quietly
or stops with one plain sentence saying what is wrong: which expression, what was
expected, what your engine gave. (Beside it: ``checkkit.py``, behind ``self_check()``,
and in a quiz's folder ``quizkit.py``, the quiz's own helpers.)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping

__all__ = [  # what lessons and sets import
    "CheckFailed",
    "call",
    "call_printed",
    "check",
    "check_close",
    "check_near",
    "check_raises",
    "describe_graph",
    "dot",
    "draw_graph",
    "engine",
    "expect",
    "graph_nodes",
    "is_close",
    "nodes_only",
    "passed",
    "recording",
    "run_closures",
    "self_check",
    "show_plot",
]
__all__ += [  # what engine() is made of, which the grader reads too
    "ENGINE_LESSONS",
    "ENGINE_TAG",
    "EngineNotFound",
    "engine_cells",
    "engine_lesson",
    "read_notebook",
    "saved_results",
]

WIDTH = 89  # no printed line is longer (students read them in a notebook)
NOT_RUN = "not run yet"

class CheckFailed(AssertionError):
    """A visible check that did not pass. Jupyter shows just its message."""

    def _render_traceback_(self) -> list[str]:  # IPython prints these lines, no traceback
        return [f"✗ {line}" if i == 0 else f"  {line}" for i, line in enumerate(_lines(self))]


def _lines(exc: BaseException) -> list[str]:
    """The message's lines, each wrapped to fit WIDTH after its "✗ " or indent."""
    import textwrap

    lines = [part for line in str(exc).splitlines()
             for part in textwrap.wrap(line, WIDTH - 2, break_long_words=True) or [""]]
    return lines or [type(exc).__name__]


def _num(x: object) -> str:
    if isinstance(x, float) and math.isfinite(x):
        return f"{x:.6g}"
    try:
        text = repr(x)
    except Exception:  # a student's __repr__ that fails must not hide the message
        text = f"<{type(x).__name__} object>"
    return text if len(text) < 40 else text[:37] + "..."


def _error(exc: BaseException, width: int | None = None) -> str:
    """The exception's name and the first line of its message, cut to ``width``."""
    if isinstance(exc, NotImplementedError):
        return "NotImplementedError (not written yet)"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


def _fit(message: str, width: int = 86, most: int = 3) -> str:
    """``message`` wrapped into at most ``most`` lines of ``width`` characters."""
    import textwrap

    lines = textwrap.wrap(message, width, break_long_words=True) or [message]
    if len(lines) > most:
        rest = " ".join(lines[most - 1:])
        lines = [*lines[: most - 1], rest[: width - 3] + "..."]
    return "\n".join(lines)


def expect(condition: object, message: str) -> None:
    """Stop with ``message`` unless ``condition`` is true."""
    if not condition:
        raise CheckFailed(message)


def is_close(got: object, expected: float, tol: float = 1e-6) -> bool:
    if not isinstance(got, (int, float)) or isinstance(got, bool):
        return False
    if math.isnan(expected):
        return math.isnan(got)
    if math.isinf(expected) or math.isinf(got):
        return got == expected
    return abs(got - expected) <= tol * max(1.0, abs(expected))


def check_close(what: str, got: object, expected: float, tol: float = 1e-6) -> None:
    """Stop unless ``got`` is within ``tol`` (relative) of ``expected``."""
    expect(is_close(got, expected, tol), f"{what}: expected {_num(expected)}, got {_num(got)}.")


def call(fn: Callable, *args, **kwargs):
    """``fn(*args, **kwargs)``, but an exception becomes one line naming ``fn``."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        name = getattr(fn, "__name__", "your function")
        raise CheckFailed(_fit(f"{name} raised {_error(exc)}")) from None


def passed(what: str) -> None:
    """The success line of a visible test."""
    print(f"✓ {what}: the visible checks pass.")


# ---- backpropagation without backward() (lesson 1) -------------------------------------


def graph_nodes(root) -> list:
    """``root`` and every node it depends on, through ``_prev``: each once, in no order to
    rely on (a drawing or a count needs only which nodes there are). Lesson 2 has you find
    an order to backpropagate in; this is not one."""
    nodes, seen, waiting = [], {id(root)}, [root]
    while waiting:
        node = waiting.pop()
        nodes.append(node)
        for parent in getattr(node, "_prev", ()) or ():
            if id(parent) not in seen:
                seen.add(id(parent))
                waiting.append(parent)
    return nodes


class _Bare:
    """A node with a number and a gradient and nothing else, as the grader's are."""

    __slots__ = ("data", "grad")

    def __init__(self, data) -> None:
        self.data, self.grad = data, 0.0

    def __getattr__(self, name: str):
        raise AttributeError(
            f"the check's nodes have no .{name}, only .data and .grad: set each .grad "
            "yourself with the chain rule"
        )


def nodes_only(g):
    """A copy of ``g`` (a namespace of Values) whose nodes have only ``.data`` and
    ``.grad``: what a function that sets gradients by hand gets when it is graded."""
    from types import SimpleNamespace

    return SimpleNamespace(**{k: _Bare(getattr(v, "data", v)) for k, v in vars(g).items()})


@contextlib.contextmanager
def recording(Value: type):
    """``with recording(Value) as made:`` lists in ``made`` every Value made in the block,
    in the order they were made (for ``run_closures``)."""
    made: list = []
    own = "__init__" in vars(Value)
    original = Value.__init__

    def __init__(node, *args, **kwargs):
        original(node, *args, **kwargs)
        made.append(node)

    Value.__init__ = __init__
    try:
        yield made
    finally:
        if own:
            Value.__init__ = original
        else:
            del Value.__init__


def run_closures(nodes, seed: float = 1.0) -> None:
    """Backpropagate through ``nodes``, listed in the order they were made (``recording``
    lists them): set the last one's grad, the output's, to ``seed``, then call each node's
    ``_backward()``, last made first. A node is made after the nodes it is made from, so
    its closure runs once every node made from it has passed its gradient back. In lesson
    2, ``backward()`` finds such an order by itself, from the graph."""
    expect(
        isinstance(nodes, (list, tuple)) and nodes,
        "run_closures takes the nodes in the order they were made, as a list:\n"
        "with recording(Value) as made: (compute), then run_closures(made).",
    )
    nodes[-1].grad = seed
    _closures(nodes)


def _closures(nodes) -> None:
    for node in reversed(nodes):
        fn = getattr(node, "_backward", None)
        if callable(fn):
            fn()


def _backpropagate(out, made) -> None:
    """The student's ``backward()`` if the class has one yet, else the closures of the
    nodes ``made`` while ``out`` was computed, last made first."""
    if callable(getattr(type(out), "backward", None)):
        out.backward()
    else:
        out.grad = 1.0
        _closures(made)


# ---- one check for an expression -------------------------------------------------------


def check(
    Value: type,
    expression: str,
    inputs: Mapping[str, float],
    data: float,
    grads: Mapping[str, float] | None = None,
    backprop: Callable | None = None,
) -> None:
    """Build ``expression`` from Values named in ``inputs`` and check it.

    Checks the output's ``data``, then backpropagates (your ``backward()`` if Value has
    one, otherwise each node's ``_backward``, last made first) and checks the gradients
    named in ``grads``.
    Example: ``check(Value, "a * b", {"a": 2.0, "b": -3.0}, data=-6.0,
    grads={"a": -3.0, "b": 2.0})``. When an expression with a plain number fails, and
    lesson 1's ``+`` or ``*`` cannot take a plain number on the right, the message says
    that it comes from there.
    """
    try:
        _check(Value, expression, inputs, data, grads, backprop)
    except CheckFailed as exc:
        cause = _number_slip(Value) if _has_number(expression) else ""
        if not cause:
            raise
        raise CheckFailed(f"{exc}\n{cause}") from None


def _has_number(expression: str) -> bool:
    """Whether ``expression`` may hand a plain number to ``+`` or ``*``: a number in it,
    a ``sum()`` (which starts from 0) or a minus (``-a`` is ``a * -1`` in the lesson)."""
    return any(ch.isdigit() for ch in expression) or "sum(" in expression or "-" in expression


def _number_slip(Value: type) -> str:
    """The line that names lesson 1's ``__add__`` or ``__mul__`` ("" if neither) when it
    cannot take a plain number on the right: every expression with a number then fails
    through it (``-a`` is ``a * -1``, ``2 + a`` is ``a + 2``), whichever exercise the
    check is for."""
    for op, method, want in (("+", "__add__", 3.5), ("*", "__mul__", 3.0)):
        if not _gives(Value, op, Value, want):
            continue  # not a slip with numbers: the method's own check says what it is
        for number in (int, float):
            if not _gives(Value, op, number, want):
                two = number(2)
                return (
                    f"(this comes from {method}, lesson 1's exercise 1: Value(1.5) {op} "
                    f"{two} fails;\na plain number on the right must be wrapped in a Value)"
                )
    return ""


def _gives(Value: type, op: str, wrap: type, want: float) -> bool:
    """Whether Value(1.5) op 2 is ``want``, with 2 as a ``wrap`` (Value, int or float)."""
    try:
        two = wrap(2)
        out = Value(1.5) + two if op == "+" else Value(1.5) * two
        return is_close(getattr(out, "data", None), want)
    except Exception:
        return False


def _check(Value, expression, inputs, data, grads, backprop) -> None:
    try:
        names = {k: Value(v) for k, v in inputs.items()}
    except Exception as exc:
        raise CheckFailed(_fit(f"Value(...) raised {_error(exc)}")) from None
    where = ", ".join(f"{k}={_num(float(v))}" for k, v in inputs.items())
    closures = backprop is None and not callable(getattr(Value, "backward", None))
    try:  # with no backward() yet, the order the nodes are made in is the order to use
        with recording(Value) if closures else contextlib.nullcontext([]) as made:
            out = eval(expression, {"math": math}, dict(names))
    except Exception as exc:
        raise CheckFailed(_fit(f"{expression} raised {_error(exc)}")) from None
    if not hasattr(out, "data"):
        raise CheckFailed(
            f"{expression} gave {_num(out)}, which has no .data: a Value keeps its number there."
        )
    got = out.data
    expect(
        is_close(got, data),
        f"{expression} at {where}: expected data {_num(data)}, got {_num(got)}.",
    )
    if not grads:
        return
    _check_structure(expression, out, {k: names[k] for k in grads})
    try:
        backprop(out) if backprop is not None else _backpropagate(out, made)
    except Exception as exc:
        raise CheckFailed(_fit(f"backpropagating {expression} raised {_error(exc)}")) from None
    for name, want in grads.items():
        g = names[name].grad
        expect(
            is_close(g, want),
            f"d({expression})/d{name} at {where}: expected {_num(want)}, got {_num(g)}.",
        )


def _check_structure(expression: str, out, inputs: Mapping[str, object]) -> None:
    """What the graders' graph walk needs: every input reachable from ``out`` through
    ``_prev``, and a ``.grad`` on every node."""
    if any(out is node for node in inputs.values()):
        return  # the expression is one of its inputs: there is no graph to walk
    expect(
        hasattr(out, "_prev"),
        f"{expression} keeps no _prev: the lessons' graph walk reads each node's parents\n"
        "from _prev (a set or a tuple of Values), so keep them there.",
    )
    reached = {id(node) for node in graph_nodes(out)}
    for name, node in inputs.items():
        expect(
            id(node) in reached,
            f"{expression}: {name} cannot be reached from the result through _prev;\n"
            "keep every operand in the new node's _prev (the graph walk reads only that).",
        )
        expect(
            hasattr(node, "grad"),
            f"{name} has no .grad: every node keeps its gradient in .grad, from 0.",
        )


def check_raises(
    Value: type,
    expression: str,
    inputs: Mapping[str, float],
    error: type[Exception],
    mentions: str = "",
) -> None:
    """Build ``expression`` from Values named in ``inputs``: it must raise ``error``, with
    ``mentions`` in its message. Example: ``check_raises(Value, "a.log()", {"a": -2.0},
    ValueError, mentions="-2")``.
    """
    try:
        names = {k: Value(v) for k, v in inputs.items()}
    except Exception as exc:
        raise CheckFailed(_fit(f"Value(...) raised {_error(exc)}")) from None
    where = ", ".join(f"{k}={_num(float(v))}" for k, v in inputs.items())
    try:
        out = eval(expression, {"math": math}, dict(names))
    except error as exc:
        expect(
            mentions in str(exc),
            f"{expression} at {where} raised {error.__name__}, but its message should\n"
            f"name the value {mentions}; it says {_num(str(exc))}.",
        )
        return
    except NotImplementedError as exc:
        raise CheckFailed(_fit(f"{expression} raised {_error(exc)}")) from None
    except Exception as exc:
        raise CheckFailed(
            f"{expression} at {where} should raise {error.__name__}, not\n{_error(exc, 86)}."
        ) from None
    got = getattr(out, "data", out)
    raise CheckFailed(
        f"{expression} at {where} should raise {error.__name__}, but it gave {_num(got)}."
    )


# ---- drawing ---------------------------------------------------------------------------

DOT_MISSING = (
    "Drawing needs Graphviz's `dot` program, which is not installed.\n"
    "Install it, then run this cell again:\n"
    "  Debian/Ubuntu: sudo apt-get install graphviz   macOS: brew install graphviz\n"
    "  conda: conda install -c conda-forge graphviz"
)


GRAPH_SIZE = "9.5,12"  # inches: a larger drawing is scaled down to fit a notebook's width
DESCRIBED = 12  # values a drawing's text alternative names one by one; the rest are counted


class _Picture:
    """A picture with a text alternative, ``alt``, for readers who cannot see it (a screen
    reader reads it out). Jupyter shows it as an HTML image with that text, since
    JupyterLab gives a plain image output none; the image itself (``mime``: SVG or PNG)
    stays in the notebook beside it, with ``alt`` in its metadata."""

    def __init__(self, mime: str, data: str, alt: str):
        self.mime, self.data, self.alt = mime, data, alt

    def _repr_mimebundle_(self, include=None, exclude=None):
        import base64
        import html

        encoded = self.data
        if self.mime == "image/svg+xml":
            encoded = base64.b64encode(self.data.encode("utf-8")).decode("ascii")
        tag = f'<img src="data:{self.mime};base64,{encoded}" alt="{html.escape(self.alt)}">'
        data = {self.mime: self.data, "text/html": tag, "text/plain": self.alt}
        return data, {self.mime: {"alt": self.alt}}

    def __repr__(self) -> str:
        return f"<picture: {self.alt}>"


def draw_graph(root, rankdir: str = "LR"):
    """Draw every node ``root`` depends on: a box per Value (label, data, grad) and a
    circle per operation. Returns a picture (an SVG drawing) that Jupyter shows inline, at
    most 9.5 inches (912 pixels) wide, with a text alternative naming the values, the
    operations and what each is made from."""
    try:
        import graphviz
    except ImportError:
        print("Drawing needs the graphviz Python package: pip install graphviz")
        return None
    dot = graphviz.Digraph(
        graph_attr={"rankdir": rankdir, "size": GRAPH_SIZE}, node_attr={"fontsize": "11"}
    )
    # Nodes and edges in an order of their own (not the order a set of parents happens to
    # give), so that the same graph is drawn the same way every time.
    def order(node):
        return (getattr(node, "label", "") or "", float(node.data), getattr(node, "_op", ""))

    nodes = sorted(graph_nodes(root), key=order)
    name = {id(node): f"n{i}" for i, node in enumerate(nodes)}
    for node in nodes:
        uid = name[id(node)]
        label = getattr(node, "label", "") or ""
        text = f"{label} | " if label else ""
        text += f"data {_num(float(node.data))} | grad {_num(float(node.grad))}"
        dot.node(uid, "{ " + text + " }", shape="record")
        op = getattr(node, "_op", "")
        if op:
            dot.node(uid + op, op, shape="circle", width="0.3")
            dot.edge(uid + op, uid)
        for parent in sorted(getattr(node, "_prev", ()) or (), key=order):
            dot.edge(name[id(parent)], uid + op if op else uid)
    try:
        svg = dot.pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        print(DOT_MISSING)
        return None
    return _Picture("image/svg+xml", svg, describe_graph(root, rankdir))


def describe_graph(root, rankdir: str = "LR") -> str:
    """What ``draw_graph(root)`` shows, in words: how many values and operations, then
    each value from the inputs to ``root`` (its data, its grad, and the operation and
    values it is made from), the first ``DESCRIBED`` of them one by one."""
    def order(node):
        return (getattr(node, "label", "") or "", float(node.data), getattr(node, "_op", ""))

    def parents(node):
        return sorted(getattr(node, "_prev", ()) or (), key=order)

    inputs_first, seen = [], set()
    waiting = [(root, False)]
    while waiting:  # depth first, each node after its parents: the drawing's left to right
        node, done = waiting.pop()
        if done:
            inputs_first.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        waiting.append((node, True))
        waiting += [(p, False) for p in reversed(parents(node)) if id(p) not in seen]

    names: dict[int, str] = {}
    unnamed: set[int] = set()  # "a + result": too long to write out, and so its children
    for node in inputs_first:  # its label, else what it computes from its parents' names
        op, made_of = getattr(node, "_op", ""), [names[id(p)] for p in parents(node)]
        name = getattr(node, "label", "") or ""
        if not name and any(id(p) in unnamed for p in parents(node)):
            pass
        elif not name and op and len(made_of) == 2:
            name = f"({made_of[0]} {op} {made_of[1]})"
        elif not name and op and len(made_of) == 1:  # tanh(x), x**2
            name = f"{op}({made_of[0]})" if op[0].isalpha() else f"{made_of[0]}{op}"
        elif not name and not op:
            name = _num(float(node.data))
        if not name or len(name) > 40:
            name = f"a {op} result"
            unnamed.add(id(node))
        names[id(node)] = name

    def called(node):
        return names[id(node)]

    ops = sum(1 for node in inputs_first if getattr(node, "_op", ""))
    way = {"LR": "left to right", "RL": "right to left", "TB": "top to bottom"}
    parts = [
        f"Graph of {called(root)}, drawn {way.get(rankdir, 'top to bottom')}: "
        f"{len(inputs_first)} values (boxes: name, data, grad) and {ops} operations "
        "(circles)."
    ]
    for node in inputs_first[:DESCRIBED]:
        text = (
            f"{called(node)}: data {_num(float(node.data))}, grad {_num(float(node.grad))}"
        )
        op = getattr(node, "_op", "")
        if op:
            text += f", made by {op} from " + " and ".join(called(p) for p in parents(node))
        parts.append(text + ".")
    if len(inputs_first) > DESCRIBED:
        parts.append(f"And {len(inputs_first) - DESCRIBED} more values.")
    return " ".join(parts)


def show_plot(alt: str, fig=None) -> None:
    """Show a matplotlib figure (default: the current one) with ``alt``, a sentence saying
    what it shows for readers who cannot see it, and close it: ``show_plot("...")`` in
    place of ``plt.show()``."""
    import base64
    import io

    import matplotlib.pyplot as plt
    from IPython.display import display

    fig = fig if fig is not None else plt.gcf()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    plt.close(fig)
    display(_Picture("image/png", base64.b64encode(buffer.getvalue()).decode("ascii"), alt))


# ---- a fused neuron (lesson 5) ---------------------------------------------------------


def dot(ws, xs, b=0.0):
    """``b + ws[0]*xs[0] + ws[1]*xs[1] + ...`` as one node of your engine, where a sum of
    products makes two nodes per input. Its closure knows every partial derivative:
    d/dws[i] = xs[i], d/dxs[i] = ws[i], d/db = 1. ``xs`` and ``b`` may be plain numbers.
    It only needs what lesson 1 built: ``Value(data, parents, op)``, ``.data``, ``.grad``
    and a ``_backward()`` closure."""
    if len(ws) != len(xs):
        raise ValueError(f"dot(): {len(ws)} weights but {len(xs)} inputs")
    found = [v for v in (*ws, *xs, b) if hasattr(v, "grad") and hasattr(v, "_backward")]
    if not found:
        raise TypeError("dot(): the weights are plain numbers; it needs Values")
    Value = type(found[0])

    def node(v):
        return v if isinstance(v, Value) else Value(v)

    ws, xs, b = [node(w) for w in ws], [node(x) for x in xs], node(b)
    out = Value(b.data + sum(w.data * x.data for w, x in zip(ws, xs)), (*ws, *xs, b), "dot")

    def _backward():
        for i, w in enumerate(ws):
            w.grad += xs[i].data * out.grad
            xs[i].grad += w.data * out.grad
        b.grad += out.grad

    out._backward = _backward
    return out


# ---- checks that name a cause on its evidence (lessons 5 and 5b) -----------------------


def _near(got: object, expected, tol: float) -> bool:
    if isinstance(expected, (list, tuple)):
        return (
            isinstance(got, (list, tuple))
            and len(got) == len(expected)
            and all(is_close(g, e, tol) for g, e in zip(got, expected))
        )
    return is_close(got, expected, tol)


def _shown_numbers(x: object) -> str:
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_num(v) for v in x) + "]"
    return _num(x)


def check_near(what: str, got: object, expected, causes=(), tol: float = 1e-6) -> None:
    """``check_close`` for a number or a list of numbers. ``causes`` are pairs (what a
    known slip would give here, a line that names it): when the check fails, the message
    names each slip whose numbers ``got`` has, and no other."""
    if _near(got, expected, tol):
        return
    named = "".join(f"\n({text})" for value, text in causes if _near(got, value, tol))
    raise CheckFailed(
        f"{what}: expected {_shown_numbers(expected)}, got {_shown_numbers(got)}.{named}"
    )


def call_printed(fn: Callable, *args, **kwargs) -> tuple:
    """``call(fn, *args, **kwargs)``, and the lines it printed: (its result, the lines)."""
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = call(fn, *args, **kwargs)
    return result, [line for line in out.getvalue().splitlines() if line.strip()]


# ---- the engine a lesson or a problem set starts from -----------------------------------
#
# Lessons 2, 3 and 5 and the problem sets start from the engine you built in the lessons
# before them, in one line: engine("mine", ...) runs your own notebook of the last lesson
# that built those names, from the folder next to this one (that notebook starts from
# the one before it, in the same way). engine("course", ...) runs the course's version of
# that lesson instead: the course/ folder beside your lessons holds the course's lessons
# that are past their due date.

# The lessons that build the engine, in course order: each one's notebook, and the names
# it makes or extends. Value grows over three lessons (lesson 2 gives it backward(),
# lesson 3 tanh() and the other functions): a notebook gets it from the last of them.
ENGINE_LESSONS = [
    ("01_value", "value.ipynb", ("Value",)),
    ("02_backward", "backward.ipynb", ("Value", "numerical_grad", "grad_check")),
    ("03_activations", "activations.ipynb", ("Value",)),
    ("05_mlp", "mlp.ipynb", ("Module", "Neuron", "Layer", "MLP")),
]
ENGINE_TAG = "engine"  # the one-line cell that says which engine a notebook starts from
COURSE_FOLDER = "course"  # beside the lessons' folder: the course's past lessons
_loading: list = []  # the notebooks engine() is running now, outermost first
_found: list = []  # (lesson, checks failing as last saved) of each one: for the last word


class EngineNotFound(Exception):
    """The engine a notebook asked for is not where it should be, or would not run."""

    def _render_traceback_(self) -> list[str]:  # IPython prints these lines, no traceback
        return [f"✗ {line}" if i == 0 else f"  {line}" for i, line in enumerate(_lines(self))]


def engine(which: str, *names: str):
    """The engine this notebook starts from: ``engine("mine", "Value")`` is the Value of
    your own notebook of the last lesson before this one that builds it (lesson 2 gets
    lesson 1's, lesson 3 lesson 2's, a problem set lesson 3's), in the folder next to
    this one. Its setup, given and exercise cells run again, quietly: never its checks or
    demonstrations. ``engine("course", ...)`` gives the course's version of that lesson
    instead, once the lesson is past its due date. One name returns that object, several
    a tuple. Grading always runs this notebook on the course's version."""
    if which not in ("mine", "course"):
        raise ValueError(f'engine(): the first argument is "mine" or "course", got {which!r}')
    known = list(dict.fromkeys(n for _, _, made in ENGINE_LESSONS for n in made))
    unknown = [n for n in names if n not in known]
    if not names or unknown:
        raise ValueError(
            f"engine(): name what to load, from {', '.join(known)} (got {unknown or 'none'})"
        )
    nested = bool(_loading)
    here = _loading[-1].parent if nested else _lesson_folder()
    folder, notebook = engine_lesson(names, here.name)
    if which == "mine":
        path = here.parent / folder / notebook
        if not path.is_file():
            whose = f"your {here.name} notebook, which starts from it" if nested else (
                "this notebook's folder")
            raise EngineNotFound(f"engine(): {folder}/{notebook} is not next to {whose}")
    else:  # course/ beside the lessons' folder (the student edition), or among them
        if here.parent.name == COURSE_FOLDER:  # a course notebook's engine cell
            courses = [here.parent]
        else:
            courses = [here.parent.parent / COURSE_FOLDER, here.parent / COURSE_FOLDER]
        shipped = [c / folder / notebook for c in courses if (c / folder / notebook).is_file()]
        if not shipped:
            raise EngineNotFound(
                f"engine(): the course's {folder} is not out yet: it comes once {folder} "
                'is past its due date (until then, use "mine"; on your own, without due '
                "dates? the self-paced edition has it: see README.md)"
            )
        path = shipped[0]
    if not nested:
        _found.clear()
    namespace, failed = _run_lesson(path, which)
    missing = [n for n in names if n not in namespace]
    if missing:
        whose = "your" if which == "mine" else "the course's"
        why = f" ({failed[0]})" if failed else ""
        raise EngineNotFound(f"engine(): {whose} {folder} notebook defines no "
                             f"{', '.join(missing)}{why}")
    if not nested:
        _say_where(which, names)
    found = tuple(namespace[n] for n in names)
    return found[0] if len(found) == 1 else found


def _lesson_folder():
    """The folder of the notebook in hand: this file's (every lesson folder has its own
    coursekit.py), or the current folder when this file is not in a lesson folder."""
    from pathlib import Path

    kit, here = Path(__file__).absolute().parent, Path.cwd().absolute()
    return here if not kit.name[:2].isdigit() and here.name[:2].isdigit() else kit


def engine_lesson(names, here: str) -> tuple[str, str]:
    """(folder, notebook) of the last lesson before ``here`` that builds any of ``names``
    (a folder whose name is no lesson's comes after all of them)."""
    chosen = None
    for name in names:
        before = [(f, nb) for f, nb, made in ENGINE_LESSONS if name in made and f < here]
        if not before:
            raise EngineNotFound(f"engine(): no lesson before {here} builds {name}")
        chosen = max(chosen or before[-1], before[-1])
    return chosen


def engine_cells(nb) -> list:
    """The code cells of a lesson that make its engine: the setup and given code (locked
    cells), the exercises (solution cells) and the cell tagged ``engine``, never the
    checks or the demonstrations."""
    cells = []
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader", {})
        made = (md.get("solution") or md.get("locked")) and not md.get("grade")
        tagged = ENGINE_TAG in cell.metadata.get("tags", [])
        if cell.get("cell_type") == "code" and (made or tagged):
            cells.append(cell)
    return cells


def _run_lesson(path, which: str) -> tuple[dict, list[str]]:
    """Run the engine cells of the notebook at ``path`` in a namespace of their own, with
    their output hidden (an engine cell there loads the lesson before it, the same way).
    Returns the namespace and a line per cell that failed: the other cells still run (a
    broken loss leaves MLP usable)."""
    import contextlib
    import io

    name = f"{path.parent.name}/{path.name}"
    if path.resolve() in [p.resolve() for p in _loading]:
        chain = " -> ".join(p.parent.name for p in [*_loading, path])
        raise EngineNotFound(f"engine(): {name} leads back to a notebook it is loading "
                             f"({chain}): is it a copy of, or a link to, another lesson's?")
    try:
        cells = engine_cells(read_notebook(path))
    except Exception as exc:
        raise EngineNotFound(f"engine(): {name} cannot be read ({_error(exc, 60)})") from None
    failing, unwritten = [], []
    if which == "mine":
        failing = [e for e, ok, _ in saved_results(path) if ok is False]
        unwritten = [c.metadata["nbgrader"].get("grade_id", "?").split("_", 1)[-1]
                     for c in cells if c.metadata.get("nbgrader", {}).get("solution")
                     and "raise NotImplementedError()" in c.source]
    _found.append((path.parent.name, failing, unwritten))
    namespace, failed = {"__name__": f"lesson_{path.parent.name}"}, []
    _loading.append(path)
    try:
        for cell in cells:
            label = cell.metadata.get("nbgrader", {}).get("grade_id") or ENGINE_TAG
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(cell.source, f"<{path.parent.name} {label}>", "exec"), namespace)
            except EngineNotFound:
                raise
            except Exception as exc:
                failed.append(f"its cell {label}: {_error(exc, 50)}")
    finally:
        _loading.pop()
    return namespace, failed


def _say_where(which: str, names) -> None:
    """Where the engine came from, in a line, and any of those notebooks' checks that
    fail, as last saved: a check here that uses them fails too."""
    import textwrap

    def listed(items) -> str:
        return ", ".join(items[:4]) + (", ..." if len(items) > 4 else "")

    lessons = [lesson for lesson, _, _ in _found]
    whose = "your own" if which == "mine" else "the course's"
    after = f" (which starts from {', '.join(lessons[1:])})" if lessons[1:] else ""
    print(f"{', '.join(names)}: {whose}, from {lessons[0]}{after}.")
    for lesson, failing, unwritten in _found:
        problems = ([f"fails the checks of {listed(failing)}"] if failing else []) + (
            [f"has {listed(unwritten)} still to write"] if unwritten else [])
        if problems:
            text = (
                f"As last saved, your {lesson} notebook {' and '.join(problems)}: a check "
                "here that uses them fails too. Fix them there (and save), or switch to "
                f'"course" once {lesson} is past.'
            )
            print("\n".join(textwrap.wrap(text, WIDTH)))
    _found.clear()


# ---- a notebook as saved: its check cells and their outputs ----------------------------
# (engine("mine", ...) names a lesson's failing checks; self_check() lists them.)

def _first_line(text: str, width: int) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def _failure(ename: str, evalue: str) -> str:
    """One line for an error: its message, or its name when the message is empty."""
    import re

    if ename in ("CellTimeoutError", "KeyboardInterrupt", "DeadKernelError", "_CheckTimeout"):
        return "did not finish in time (an endless loop?)"
    if ename == "NotImplementedError" or "raised NotImplementedError" in str(evalue):
        return "not written yet"
    if ename in ("CheckFailed", "GradingFailure"):
        return _first_line(" ".join(str(evalue).split()), 200)
    message = re.sub(r"\x1b\[[0-9;]*m", "", f"{ename}: {evalue}".rstrip(": "))
    return _first_line(message, 200)


def _exercise_name(cell) -> str:
    grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "?")
    return grade_id.split("test_", 1)[-1]


class _Node(dict):
    """A notebook's JSON with attribute access, like nbformat's (without importing it:
    that takes a second, and the quick self-check only reads)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def read_notebook(path) -> _Node:
    """The notebook at ``path``, its cells' sources as text, with attribute access like
    nbformat's (quick: it only parses the JSON)."""
    import json

    def node(value):
        if isinstance(value, dict):
            return _Node({k: node(v) for k, v in value.items()})
        if isinstance(value, list):
            return [node(v) for v in value]
        return value

    with open(path, encoding="utf-8") as f:
        nb = node(json.load(f))
    for cell in nb.get("cells", []):
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
        cell.setdefault("metadata", _Node())
    return nb


def _check_cells(nb) -> list:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def saved_results(path) -> list[tuple[str, bool | None, str]]:
    """(exercise, passed, message) for each check cell, from the outputs saved in the
    notebook at ``path`` (passed is None for a check cell that has not run)."""
    try:
        nb = read_notebook(path)
    except Exception as exc:
        return [("-", False, _first_line(f"could not read: {type(exc).__name__}: {exc}", 200))]
    results = []
    for cell in _check_cells(nb):
        outputs = cell.get("outputs", [])
        errors = [o for o in outputs if o.get("output_type") == "error"]
        if errors:
            error = errors[0]
            results.append((_exercise_name(cell), False,
                            _failure(error.get("ename", ""), error.get("evalue", ""))))
        elif cell.get("execution_count") is None and not outputs:
            results.append((_exercise_name(cell), None, NOT_RUN))
        else:
            results.append((_exercise_name(cell), True, ""))
    return results


# ---- your progress: self_check() (the runner is checkkit.py, beside this file) -------


def self_check(folder=None, full: bool = False) -> None:
    """Print your progress through the course (see checkkit.py beside this file)."""
    _beside("checkkit").self_check(folder, full)


# Names that lived here before the quiz kit and the self-check had files of their own: a
# notebook saved then (yours in my-work/ is never replaced) still imports them from here.
_MOVED = {
    "quizkit": ("Quiz", "answer_problem", "check_answer", "quiz_variant"),
    "checkkit": ("self_check_overview", "self_check_table", "visible_checks", "live_results"),
}


def __getattr__(name: str):
    for module, names in _MOVED.items():
        if name in names:
            return getattr(_beside(module), name)
    raise AttributeError(f"module 'coursekit' has no attribute {name!r}")


def _beside(name: str):
    """The course's module ``name`` from this file's folder: the one imported already if
    it is that file, else loaded from there (the grader loads these files by path)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).absolute().with_name(f"{name}.py")
    found = sys.modules.get(name)
    if found is not None and Path(getattr(found, "__file__", None) or "").absolute() == path:
        return found
    key = f"_{name}_beside_{abs(hash(str(path)))}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]
