"""Helpers for the course notebooks: the visible checks, and drawing a graph of Values.

Every lesson folder has this file beside its notebook. A check either returns quietly or
stops with one plain sentence saying what is wrong: which expression, what was expected,
what your engine gave.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

__all__ = [
    "CheckFailed",
    "call",
    "check",
    "check_close",
    "check_raises",
    "dot",
    "draw_graph",
    "engine",
    "expect",
    "graph_nodes",
    "nodes_only",
    "passed",
    "run_closures",
    "self_check",
]


class CheckFailed(AssertionError):
    """A visible check that did not pass. Jupyter shows just its message."""

    def _render_traceback_(self) -> list[str]:  # IPython prints these lines, no traceback
        return [f"✗ {line}" if i == 0 else f"  {line}" for i, line in enumerate(_lines(self))]


def _lines(exc: BaseException) -> list[str]:
    return str(exc).splitlines() or [type(exc).__name__]


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
    """Every node that ``root`` depends on, through ``_prev``, each after its parents.

    (Lesson 2 has you write a sort like this one. This one keeps, for each node on its
    stack, the parents it has still to visit; it works on any engine's nodes.)"""
    order: list = []
    seen = {id(root)}
    stack = [(root, iter(getattr(root, "_prev", ()) or ()))]
    while stack:
        node, waiting = stack[-1]
        for parent in waiting:
            if id(parent) not in seen:
                seen.add(id(parent))
                stack.append((parent, iter(getattr(parent, "_prev", ()) or ())))
                break
        else:
            stack.pop()
            order.append(node)
    return order


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


def run_closures(root, seed: float = 1.0) -> None:
    """Set ``root.grad = seed``, then call every node's ``_backward()``, outputs first.

    This is what ``backward()`` will do once you write it in lesson 2.
    """
    root.grad = seed
    for node in reversed(graph_nodes(root)):
        fn = getattr(node, "_backward", None)
        if callable(fn):
            fn()


def _backpropagate(root) -> None:
    """The student's ``backward()`` if the class has one yet, else the closures."""
    if callable(getattr(type(root), "backward", None)):
        root.backward()
    else:
        run_closures(root)


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
    one, otherwise each node's ``_backward``) and checks the gradients named in ``grads``.
    Example: ``check(Value, "a * b", {"a": 2.0, "b": -3.0}, data=-6.0,
    grads={"a": -3.0, "b": 2.0})``.
    """
    try:
        names = {k: Value(v) for k, v in inputs.items()}
    except Exception as exc:
        raise CheckFailed(_fit(f"Value(...) raised {_error(exc)}")) from None
    where = ", ".join(f"{k}={_num(float(v))}" for k, v in inputs.items())
    try:
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
        (backprop or _backpropagate)(out)
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


def draw_graph(root, rankdir: str = "LR"):
    """Draw every node ``root`` depends on: a box per Value (label, data, grad) and a
    circle per operation. Returns an SVG that Jupyter shows inline, at most 9.5 inches
    (912 pixels) wide."""
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
    from IPython.display import SVG

    return SVG(svg)


# ---- self-check: your progress through the course ---------------------------------------
#
# self_check() (the last cell of every lesson) is quick: it runs the check cells of the
# notebook in hand again, in this kernel, and gives every other lesson one line from what
# its saved notebook shows. self_check_table() runs every notebook afresh, as saved: the
# thorough version, for a terminal (`python lab.py --check` in the student edition).

SKIP_SELF_CHECK = "COURSEKIT_NO_SELF_CHECK"  # set while grading or generating: do nothing
WIDTH = 89  # no printed line is longer (students read them in a notebook)
NAME_COLUMN = 22  # exercise names up to this long keep the messages in one column
CHECK_SECONDS = 20  # a re-run check cell that takes longer is stopped (an endless loop?)
NOT_RUN = "not run yet"


def _running_unattended() -> bool:
    """True while grading, validating or generating, where self_check must do nothing.

    nbgrader, nbclient and nbconvert start their kernels with an in-memory history;
    JupyterLab's kernels keep a history file.
    """
    import os

    if os.environ.get(SKIP_SELF_CHECK):
        return True
    shell = _shell()
    history = getattr(shell, "history_manager", None)
    return str(getattr(history, "hist_file", "")) == ":memory:"


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _course_folder(folder=None):
    """The folder holding the lesson folders: ``folder``, or found from the current one."""
    from pathlib import Path

    here = Path(folder) if folder is not None else Path.cwd()
    if any(here.glob("*.ipynb")) and (here / "coursekit.py").exists():
        return here.parent  # a lesson folder, like my-work/01_value
    return here


def _lessons(course) -> list:
    if not course.is_dir():
        return []
    return sorted(
        p for p in course.iterdir()
        if p.is_dir() and not p.name.startswith((".", "_")) and any(p.glob("*.ipynb"))
    )


def _plan(course) -> list:
    """(name, notebook path) for every notebook of every lesson folder in ``course``."""
    plan = []
    for lesson in _lessons(course):
        paths = sorted(lesson.glob("*.ipynb"))
        plan += [(lesson.name if len(paths) == 1 else f"{lesson.name}/{p.stem}", p) for p in paths]
    return plan


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


def _read(path) -> _Node:
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


def _rows(results, indent: int = 2) -> list[str]:
    """Aligned lines for (exercise, passed, message) results: ✓ or ✗, the name, and the
    message in one column (on the next line, same column, after a very long name)."""
    import textwrap

    names = [name for name, _, _ in results]
    width = min(max(map(len, names), default=0), NAME_COLUMN)
    column = indent + 2 + width + 2
    lines = []
    for name, ok, message in results:
        head = f"{' ' * indent}{'✓' if ok else '✗'} {name}"
        if not message:
            lines.append(head)
            continue
        text = textwrap.wrap(message, WIDTH - column, break_long_words=True) or [""]
        if len(text) > 2:
            text = [text[0], _first_line(" ".join(text[1:]), WIDTH - column)]
        if len(head) + 2 <= column:
            lines.append(f"{head:<{column}}{text[0]}")
            text = text[1:]
        else:
            lines.append(head)
        lines += [" " * column + part for part in text]
    return lines


def visible_checks(path, timeout: int = 60) -> list[tuple[str, bool, str]]:
    """Run the notebook at ``path`` in a fresh kernel (in its own folder, as saved) and
    return (exercise, passed, first failure message) for each of its check cells."""
    import logging
    import os
    import subprocess

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    tests = _check_cells(nb)
    log = logging.getLogger("coursekit.self_check")
    log.propagate = False
    log.addHandler(logging.NullHandler())
    client = NotebookClient(
        nb, timeout=timeout, interrupt_on_timeout=True, allow_errors=True,
        kernel_name="python3", log=log, resources={"metadata": {"path": str(path.parent)}},
    )
    env = dict(os.environ, **{SKIP_SELF_CHECK: "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    try:
        client.execute(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except Exception as exc:  # the kernel died or never started: report it, carry on
        problem = _first_line(f"could not run: {type(exc).__name__}: {exc}", 200)
        return [(_exercise_name(c), False, problem) for c in tests] or [("-", False, problem)]
    results = []
    for cell in tests:
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        if cell.get("execution_count") is None and not errors:
            results.append((_exercise_name(cell), False, "did not run"))
        else:
            message = _failure(errors[0].ename, errors[0].evalue) if errors else ""
            results.append((_exercise_name(cell), not errors, message))
    return results


def saved_results(path) -> list[tuple[str, bool | None, str]]:
    """(exercise, passed, message) for each check cell, from the outputs saved in the
    notebook at ``path`` (passed is None for a check cell that has not run)."""
    try:
        nb = _read(path)
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


class _CheckTimeout(Exception):
    pass


def _run_check(source: str, namespace: dict) -> tuple[bool, str]:
    """Run one check cell's code in ``namespace``, quietly: (passed, failure message)."""
    import contextlib
    import io
    import signal
    import threading

    def stop(signum, frame):
        raise _CheckTimeout()

    timed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if timed:
        previous = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, CHECK_SECONDS)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            exec(compile(source, "<check cell>", "exec"), namespace)
    except Exception as exc:
        return False, _failure(type(exc).__name__, str(exc))
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return True, ""


def live_results(path, shell=None) -> list[tuple[str, bool | None, str]] | None:
    """(exercise, passed, message) for each check cell of the notebook at ``path``, run
    again in this kernel on what your cells defined; a check cell this kernel has not run
    yet is reported as not run. None if the notebook's cells have not run in this kernel.
    """
    shell = shell or _shell()
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if not history:
        return None
    ran = {source.strip() for source in history}
    nb = _read(path)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    if not code or code[0].source.strip() not in ran:  # the setup cell has not run
        return None
    namespace = dict(shell.user_ns)  # the checks' own variables stay out of yours
    results = []
    for cell in _check_cells(nb):
        if cell.source.strip() not in ran:
            results.append((_exercise_name(cell), None, NOT_RUN))
        else:
            results.append((_exercise_name(cell), *_run_check(cell.source, namespace)))
    return results


def _current_notebook(course, plan):
    """The notebook this kernel belongs to, if it is one of ``plan``'s."""
    import os
    from pathlib import Path

    session = os.environ.get("JPY_SESSION_NAME", "")
    paths = [p for _, p in plan]
    if session.endswith(".ipynb"):
        for path in paths:
            if path.resolve() == Path(session).resolve():
                return path
    here = [p for p in paths if p.parent.resolve() == Path.cwd().resolve()]
    return max(here, key=lambda p: p.stat().st_mtime) if here else None


def _summary(results) -> str:
    done = sum(ok is True for _, ok, _ in results)
    if all(ok is None for _, ok, _ in results):
        return "not started"
    failed = sum(ok is False for _, ok, _ in results)
    return f"{done}/{len(results)} ✓" + (f", {failed} ✗" if failed else "")


def self_check_overview(folder=None, show=print) -> list[tuple[str, str, bool | None, str]]:
    """Your progress, quickly: the notebook in hand, its checks run again in this kernel,
    a line per exercise; every other lesson one line, from its saved notebook. Returns
    the rows (notebook, exercise, passed or None if not run, message)."""
    course = _course_folder(folder)
    plan = _plan(course)
    if not plan:
        show(f"self_check: no lesson folders with notebooks in {course}.")
        return []
    current = _current_notebook(course, plan)
    width = max(len(name) for name, _ in plan)
    rows, others = [], []
    for name, path in plan:
        if path == current:
            live = live_results(path)
            here = live if live is not None else saved_results(path)
            done = sum(ok is True for _, ok, _ in here)
            how = "run again now" if live is not None else "as last saved: run its cells first"
            show(f"{name} (this notebook, {how}): {done} of {len(here)} pass")
            for line in _rows([(e, bool(ok), m) for e, ok, m in here]):
                show(line)
            rows += [(name, *r) for r in here]
        else:
            results = saved_results(path)
            others.append(f"  {name:<{width}}  {_summary(results)}")
            rows += [(name, *r) for r in results]
    if others:
        show("Other lessons, as last saved:" if current else "Lessons, as last saved:")
        for line in others:
            show(line)
    done = sum(ok is True for *_, ok, _ in rows)
    show(f"Course: {done} of {len(rows)} exercises pass their visible checks.")
    if rows and done == len(rows):
        show("Well done! The hidden tests will try more cases when your work is graded.")
    return rows


def self_check_table(folder=None, show=print) -> list[tuple[str, str, bool, str]]:
    """Run every notebook of every lesson folder in ``folder`` (default: the folder around
    the current lesson) in a fresh kernel, as saved, and show a line per exercise; return
    the rows (notebook, exercise, passed, first failure message)."""
    course = _course_folder(folder)
    plan = _plan(course)
    if not plan:
        show(f"self_check: no lesson folders with notebooks in {course}.")
        return []
    show(f"Visible checks of the notebooks in {course.name}/ (as last saved):")
    rows = []
    for name, path in plan:
        results = visible_checks(path)
        show(f"{name}: {sum(ok for _, ok, _ in results)} of {len(results)} pass")
        for line in _rows(results):
            show(line)
        rows += [(name, *r) for r in results]
    done = sum(ok for *_, ok, _ in rows)
    show(f"{done} of {len(rows)} exercises pass their visible checks.")
    if rows and done == len(rows):
        show("Well done! The hidden tests will try more cases when your work is graded.")
    return rows


def self_check(folder=None, full: bool = False) -> None:
    """Print your progress through the course.

    The exercises of this notebook: each check cell you have run is run again, now, on
    what your cells defined. Every other lesson: one line, from its notebook as last
    saved (so save, Ctrl+S, after working on one). ``self_check(full=True)`` runs every
    saved notebook afresh instead (slower). While a notebook is being graded, validated
    or generated it only prints one line.
    """
    if _running_unattended():
        print("self_check: skipped (this notebook is being run automatically).")
        return
    try:
        if full:
            import nbclient  # noqa: F401
            import nbformat  # noqa: F401
    except ImportError:
        print("self_check needs nbclient and nbformat: pip install nbclient nbformat")
        return
    if full:
        self_check_table(folder)
    else:
        self_check_overview(folder)


# ---- quiz answers: is an answer well-formed? (never whether it is right) ---------------

__all__ += ["answer_problem", "check_answer"]


def _shown(value: object, width: int = 30) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _is_number(x: object) -> bool:
    from numbers import Real

    return isinstance(x, Real) and not isinstance(x, bool)


def _listed(options) -> str:
    quoted = [f'"{o}"' if isinstance(o, str) else str(o) for o in options]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def answer_problem(name: str, value: object, *, choices=None, kind=None, items=None,
                   calls=()) -> tuple[str | None, object]:
    """(problem, answer): why ``value`` is not a well-formed answer to question ``name``
    (None if it is), and the answer in its usual form (``" B"`` becomes ``"b"``).

    ``choices="abcd"``: one of these letters. ``kind=bool``: True or False. ``kind=float``:
    a number. ``kind=int, choices=range(1, 9)``: a whole number from the range.
    ``kind=list, items=[...]``: every item once, in some order. ``kind=callable``: a
    function that returns a number for each argument tuple in ``calls``.
    """
    if value is None and kind is callable:
        return f"{name} is not written yet: def {name}(...) in its answer cell.", None
    if value is None:
        return f"{name} is not answered yet: set it in its answer cell.", None
    got = f"; got {_shown(value)}."
    if isinstance(choices, str):
        letter = value.strip().lower() if isinstance(value, str) else None
        if letter is None or len(letter) != 1 or letter not in choices:
            return f"{name} must be {_listed(choices)} (a letter in quotes){got}", None
        return None, letter
    if kind is bool:
        if not isinstance(value, bool):
            return f"{name} must be True or False (no quotes){got}", None
        return None, value
    if kind is float:
        if not _is_number(value) or not math.isfinite(value):
            return f"{name} must be a number such as 1.5 (no quotes){got}", None
        return None, float(value)
    if kind is int:
        whole = _is_number(value) and math.isfinite(value) and float(value).is_integer()
        if not whole or (choices is not None and int(value) not in choices):
            span = f" from {min(choices)} to {max(choices)}" if choices is not None else ""
            return f"{name} must be a whole number{span}{got}", None
        return None, int(value)
    if kind is list:
        if not isinstance(value, (list, tuple)):
            example = ", ".join(f'"{i}"' for i in sorted(items)[:2])
            return f"{name} must be a list such as [{example}, ...]{got}", None
        labels = [v.strip() if isinstance(v, str) else v for v in value]
        for label in labels:
            if label not in items:
                return f"{name}: {_shown(label)} is not one of {', '.join(sorted(items))}.", None
            if labels.count(label) > 1:
                return f"{name} lists {_shown(label)} more than once.", None
        missing = [i for i in sorted(items) if i not in labels]
        if missing:
            return f"{name} leaves out {_shown(missing[0])}: list all {len(items)}.", None
        return None, labels
    if kind is callable:
        if not callable(value):
            return f"{name} must be a function (def {name}(...): ...){got}", None
        for args in calls:
            where = f"{name}({', '.join(map(_num, args))})"
            try:
                result = value(*args)
            except Exception as exc:
                return f"{where} raised {_error(exc, 86 - len(where))}", None
            if not _is_number(result) or not math.isfinite(result):
                return f"{where} must return a number; got {_shown(result)}.", None
        return None, value
    raise ValueError(f"answer_problem: no kind of answer given for {name}")


def check_answer(name: str, value: object, **spec) -> None:
    """Stop with one line if ``value`` is not a well-formed answer to question ``name``
    (see ``answer_problem`` for ``spec``); otherwise say so. It never tells whether the
    answer is right: that is graded after you submit."""
    problem, answer = answer_problem(name, value, **spec)
    expect(problem is None, problem)
    if callable(answer):
        print(f"✓ {name} runs and returns numbers; it is graded after you submit.")
    else:
        print(f"✓ {name} = {_shown(answer, 40)}: a valid answer (graded after you submit).")


# ---- checkpoint quizzes: a variant for every student, and a practice round ------------
#
# A quiz's questions are written once, in questions.py beside the quiz notebook: each is a
# function that draws one variant (its numbers, its wording, the order of its options)
# from a ``Pick``. Your variant is drawn from your student id and the quiz, so it is the
# same every time you open the notebook and differs from your classmates'. Practice
# variants come from the same functions with practice seeds and pools of their own (no
# practice variant shows the wording, options or numbers of a graded one); their answers are
# worked out by the course beforehand and kept in the notebook, so a practice answer is
# checked at once. Your graded variant gets only the form check: it is graded after you
# submit, against your id's variant.

__all__ += ["Quiz", "quiz_variant"]

QUIZ_MIME = "application/vnd.autograd-course.quiz+json"  # which id a notebook showed
STUDENT_ID_ENV = "COURSEKIT_STUDENT_ID"  # set while grading: the id a submission is graded under
TYPED = "typed in the first cell"
NUMBER_TOL = 1e-3  # a number answer counts within this of the exact value
FUNCTION_TOL = 1e-6  # a function answer: relative tolerance at every point
LETTERS = "abcdefgh"


class Pick:
    """The seeded choices behind one variant of one question. The same seed gives the
    same variant on any computer and any Python version (only ``random()`` is used)."""

    def __init__(self, seed: str, practice: bool = False):
        import hashlib
        import random

        digest = hashlib.sha256(seed.encode()).digest()
        self._rng = random.Random(int.from_bytes(digest[:8], "big"))
        self.practice = practice  # a practice variant: drawn from the practice pools

    def pool(self, graded, practice):
        """One of ``graded`` or, for a practice variant, one of ``practice``. What decides
        a question's answer (its wordings, option sets, statements, listings) is split in
        these two pools: no practice variant shows what a graded variant shows."""
        return self.one(practice if self.practice else graded)

    def one(self, options):
        """One of ``options``."""
        options = list(options)
        return options[min(int(self._rng.random() * len(options)), len(options) - 1)]

    def several(self, options, k: int) -> list:
        """``k`` different items of ``options``, in a random order."""
        return self.shuffled(options)[:k]

    def shuffled(self, items) -> list:
        """``items`` in a random order."""
        items = list(items)
        for i in range(len(items) - 1, 0, -1):
            j = min(int(self._rng.random() * (i + 1)), i)
            items[i], items[j] = items[j], items[i]
        return items


def _seed(assignment: str, who: str, question: str) -> str:
    return f"{assignment}\0{who}\0{question}"


def _graded(student: str) -> str:
    return f"graded\0{student}"


def _practice(n: int) -> str:
    return f"practice\0{n}"


def _load_questions(assignment: str, folder=None):
    """questions.py of ``assignment``: beside the notebook (the current folder), beside
    this file, or in ``folder``."""
    import importlib.util
    from pathlib import Path

    places = [Path(folder)] if folder is not None else [Path.cwd(), Path(__file__).parent]
    for place in places:
        path = place / "questions.py"
        if path.is_file():
            name = f"_quiz_questions_{assignment}_{abs(hash(str(path.resolve())))}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if getattr(module, "ASSIGNMENT", None) == assignment:
                return module
    raise FileNotFoundError(
        f"questions.py of {assignment} is not beside this notebook: open the quiz from its "
        "own folder"
    )


class Variant:
    """One variant of one question: what it shows, the form its answer takes, and its
    numbers (``v.values``, or ``v.a`` for ``v.values["a"]``)."""

    def __init__(self, question: str, drawn: dict, seed: str):
        self.question = question
        self.seed = seed
        self.kind = drawn["kind"]
        self.text = drawn["text"]
        self.code = drawn.get("code", "")
        self.figure = drawn.get("figure")
        self.stem = drawn.get("stem", "")
        self.options = list(drawn.get("options", ()))  # [(id, text)], in the order shown
        self.listing = list(drawn.get("listing", ()))
        self.template = drawn.get("template", "")
        self.items = list(drawn.get("items", ()))
        self.asks = drawn.get("asks", "")
        self.calls = [tuple(c) for c in drawn.get("calls", ())]
        self.name = drawn.get("name", question)  # the answer's name in the notebook
        self.values = dict(drawn.get("values", {}))

    def __getattr__(self, name: str):
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"this variant of {self.question} has no number {name!r}")

    def spec(self) -> dict:
        """The form of a well-formed answer (the keywords of ``answer_problem``)."""
        if self.kind == "choice":
            return {"choices": LETTERS[: len(self.options)]}
        if self.kind == "truth":
            return {"kind": bool}
        if self.kind == "number":
            return {"kind": float}
        if self.kind == "line":
            return {"kind": int, "choices": range(1, len(self.listing) + 1)}
        if self.kind == "order":
            return {"kind": list, "items": sorted(self.items)}
        if self.kind == "function":
            return {"kind": callable, "calls": self.calls}
        raise ValueError(f"{self.question}: no such kind of question: {self.kind!r}")

    def letter(self, option: str) -> str:
        """The letter of the option with this id, as this variant orders them."""
        ids = [i for i, _ in self.options]
        return LETTERS[ids.index(option)]

    def letter_of(self, words: str) -> str:
        """The letter of the one option whose text contains ``words``."""
        found = [LETTERS[i] for i, (_, text) in enumerate(self.options) if words in text]
        if len(found) != 1:
            raise ValueError(f"{len(found)} options of {self.question} contain {words!r}")
        return found[0]

    def line_of(self, words: str) -> int:
        """The number of the one line of the listing that contains ``words``."""
        found = [i + 1 for i, line in enumerate(self.listing) if words in line]
        if len(found) != 1:
            raise ValueError(f"{len(found)} lines of {self.question} contain {words!r}")
        return found[0]

    def markdown(self) -> str:
        """The question as the notebook shows it."""
        parts = [self.text]
        if self.code:
            parts.append("```python\n" + self.code.strip("\n") + "\n```")
        if self.listing:
            width = len(str(len(self.listing)))
            numbered = [f"{i + 1:>{width}}  {line}".rstrip() for i, line in
                        enumerate(self.listing)]
            parts.append("```\n" + "\n".join(numbered) + "\n```")
        if self.options:
            parts.append("\n".join(f"- **{LETTERS[i]}**: {text}"
                                   for i, (_, text) in enumerate(self.options)))
        return "\n\n".join(parts)

    def draw(self):
        """The figure of the question, if it has one: its graph, drawn."""
        if not self.figure:
            return None
        return draw_graph(_sketch(self.figure["code"], self.figure["root"]))


def quiz_id(who: object) -> str:
    """A student id as a variant is drawn from it: Unicode compatibility forms, case and
    spacing do not count (``" Bob "``, ``"bob"`` and ``"BOB"`` are one id; the grader's
    roster compares ids the same way, ``roster.fold``)."""
    import unicodedata

    return " ".join(unicodedata.normalize("NFKC", str(who)).casefold().split())


def _numbers_half(values: dict) -> bool:
    """The half of a question's numbers ``values`` belongs to: False for graded variants,
    True for practice ones (a hash of the numbers), so that no practice variant has the
    numbers of any student's graded variant."""
    import hashlib
    import json

    text = json.dumps(values, sort_keys=True)
    return bool(hashlib.sha256(text.encode()).digest()[0] & 1)


def quiz_variant(assignment: str, who, question: str, questions=None) -> Variant:
    """The variant of ``question`` for the student id ``who`` (graded; see ``quiz_id``)
    or, with ``who=("practice", n)``, practice variant ``n``. Graded and practice variants
    are drawn from apart: wordings, option sets, statements and listings from the two
    pools of ``Pick.pool``, numbers from the two halves of ``_numbers_half`` (or, for a
    question with ``numbers_in_pools``, from its pools too)."""
    questions = questions or _load_questions(assignment)
    draw = questions.QUESTIONS[question]
    base = getattr(draw, "same_numbers_as", question)  # a question that reuses another's
    halves = not getattr(draw, "numbers_in_pools", False)  # else pick.pool splits them
    practice = isinstance(who, tuple)
    seed = _seed(assignment, _practice(who[1]) if practice else _graded(quiz_id(who)), base)
    pick = Pick(seed, practice=practice)
    for _ in range(200):  # numbers of the other half: draw again (a half in 2**200 fails)
        drawn = draw(pick)
        if not (halves and drawn.get("values")) or _numbers_half(drawn["values"]) == practice:
            return Variant(question, drawn, seed)
    raise ValueError(f"{question}: no {'practice' if practice else 'graded'} numbers drawn")


# ---- drawings of a question's code ------------------------------------------------------


class _Sketch:
    """A box of a drawing: data, parents and op, computed as the question's code says.
    It builds graphs and nothing else (every box shows grad 0)."""

    def __init__(self, data, _parents=(), _op="", label=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(dict.fromkeys(_parents))  # c * c: one arrow from c
        self._op = _op
        self.label = label


def _sketch_method(symbol: str, fn, reflected: bool = False):
    def method(self, other):
        other = other if isinstance(other, _Sketch) else _Sketch(other)
        left, right = (other, self) if reflected else (self, other)
        return _Sketch(fn(left.data, right.data), (left, right), symbol)

    return method


def _install_sketch_operators() -> None:
    import operator

    table = {"+": ("add", operator.add), "*": ("mul", operator.mul),
             "-": ("sub", operator.sub), "/": ("truediv", operator.truediv)}
    for symbol, (name, fn) in table.items():
        setattr(_Sketch, f"__{name}__", _sketch_method(symbol, fn))
        setattr(_Sketch, f"__r{name}__", _sketch_method(symbol, fn, reflected=True))


_install_sketch_operators()


def _sketch(code: str, root: str) -> _Sketch:
    """Run ``code`` with ``Value`` drawing boxes; every box a name holds gets that name as
    its label, unless the code gave it one."""
    namespace = {"Value": _Sketch}
    exec(compile(code, "<question>", "exec"), namespace)
    for name, value in namespace.items():
        if isinstance(value, _Sketch) and not value.label:
            value.label = name
    return namespace[root]


# ---- whose variant: the student id ------------------------------------------------------


def _exchange_user():
    """The user name nbgrader's exchange would file a submission under, when this computer
    has nbgrader's exchange (its root, from nbgrader_config.py, exists); else None."""
    import os

    try:
        from jupyter_core.paths import jupyter_config_path
        from traitlets.config.loader import PyFileConfigLoader
    except ImportError:
        return None
    root = "/srv/nbgrader/exchange"  # nbgrader's default
    for folder in [*reversed(jupyter_config_path()), os.getcwd()]:
        if os.path.isfile(os.path.join(folder, "nbgrader_config.py")):
            try:
                config = PyFileConfigLoader("nbgrader_config.py", path=folder).load_config()
                root = str(config.Exchange.get("root", root))
            except Exception:
                continue
    if not os.path.isdir(root):
        return None
    try:
        from nbgrader.utils import get_username
        return get_username()
    except Exception:
        import getpass
        return getpass.getuser()


def student_id(typed: str = "") -> tuple[str, str]:
    """(id, where it came from): set by the grader, JupyterHub's user, nbgrader's exchange
    user, or what you typed in the quiz's first cell ("" if none of them)."""
    import os

    typed = typed.strip() if isinstance(typed, str) else ""
    if os.environ.get(STUDENT_ID_ENV):
        return os.environ[STUDENT_ID_ENV], "set by the grader"
    if os.environ.get("JUPYTERHUB_USER"):
        return os.environ["JUPYTERHUB_USER"], "your JupyterHub user"
    exchange = _exchange_user()
    if exchange:
        return exchange, "your user name on nbgrader's exchange"
    return typed, TYPED if typed else ""


class Quiz:
    """A checkpoint quiz as you see it: your variant of each question (``show``), the
    form check of your answers (``check``) and the practice round (``practice``)."""

    def __init__(self, assignment: str, typed_id: str = ""):
        self.assignment = assignment
        self.questions = _load_questions(assignment)
        given, found = student_id(typed_id)
        self.student = quiz_id(given)  # the id the variants are drawn from
        self._practised: dict[str, int] = {}
        if not self.student:
            print('✗ No student id yet: type yours in the first cell, such as my_id = "ada",')
            print("  run that cell, then this one. Until then no question can be shown.")
            return
        lines = [f"Your variant of this quiz: questions shown for id {self.student!r}.",
                 f"Where that id comes from: {found}."]
        if given != self.student:
            lines[-1] = (f"Where that id comes from: {found}, as {given!r} (case and spaces in "
                         "an id do not count).")
        typed = quiz_id(typed_id) if isinstance(typed_id, str) else ""
        if found != TYPED and typed not in ("", self.student):
            lines.append(f"{typed_id.strip()!r}, typed in the first cell, is not used.")
        lines.append("Your classmates' numbers differ.")
        _display({"text/plain": "\n".join(_fit(line, WIDTH, most=4) for line in lines),
                  QUIZ_MIME: {"assignment": assignment, "id": self.student}})

    def variant(self, question: str) -> Variant:
        """Your variant of ``question``."""
        expect(self.student, 'no student id yet: type yours in the first cell (my_id = "...").')
        return quiz_variant(self.assignment, self.student, question, self.questions)

    def show(self, question: str) -> None:
        """Show your variant of ``question``."""
        if not self.student:
            print('(type your id in the first cell, my_id = "...", to see this question)')
            return
        _show(self.variant(question))

    def check(self, question: str, answer: object) -> None:
        """The form check of your answer to ``question`` (never whether it is right)."""
        variant = self.variant(question)
        check_answer(variant.name, answer, **variant.spec())

    def practice(self, question: str, n: int | None = None) -> Practice:
        """A practice variant of ``question`` (the next one, or number ``n``): other
        numbers than yours, and its answer is checked at once, with the worked answer."""
        bank = _practice_bank(self.assignment).get(question)
        expect(bank, f"no practice round for {question} here: is this the quiz's own notebook?")
        if n is None:
            n = self._practised.get(question, 0) % len(bank)
            self._practised[question] = n + 1
        expect(isinstance(n, int) and 0 <= n < len(bank),
               f"practice variants of {question} are numbered 0 to {len(bank) - 1}.")
        variant = quiz_variant(self.assignment, ("practice", n), question, self.questions)
        print(f"Practice variant {n} of {question} (not graded; your own variant is above):")
        _show(variant)
        return Practice(variant, bank[n])


class Practice:
    """A practice variant: ``answer(value)`` checks an answer at once and explains."""

    def __init__(self, variant: Variant, entry: dict):
        self.variant = variant
        self._entry = entry
        self.right = None  # not answered yet

    def __repr__(self) -> str:
        return f"<practice variant of {self.variant.question}: call .answer(...)>"

    def answer(self, value: object) -> None:
        """Check ``value`` against this practice variant: say whether it is right, and
        show the worked answer (``.right`` keeps the verdict)."""
        variant = self.variant
        problem, value = answer_problem(variant.name, value, **variant.spec())
        self.right = False
        if problem is not None:
            print(f"✗ {problem}")
            return
        self.right = _is_right(variant, value, _decode(self._entry["key"]))
        print("✓ Right." if self.right else "✗ Not right.")
        for line in _fit(f"Why: {_decode(self._entry['why'])}", WIDTH, most=12).splitlines():
            print(line)


def _is_right(variant: Variant, answer: object, key) -> bool:
    """Whether a well-formed ``answer`` is right, given the key the course worked out."""
    if variant.kind == "number":
        return abs(answer - key) <= NUMBER_TOL
    if variant.kind == "order":
        done: set = set()
        for label in answer:
            if set(key.get(label, ())) - done:
                return False
            done.add(label)
        return True
    if variant.kind == "function":
        for args, expected in key:
            try:
                got = answer(*args)
            except Exception:
                return False
            if not is_close(got, expected, FUNCTION_TOL):
                return False
        return True
    return answer == key


def _show(variant: Variant) -> None:
    _display({"text/markdown": variant.markdown(), "text/plain": variant.markdown()})
    figure = variant.draw()
    if figure is not None:
        from IPython.display import display

        display(figure)


def _display(bundle: dict) -> None:
    try:
        from IPython.display import display
    except ImportError:
        print(bundle.get("text/plain", ""))
        return
    display(bundle, raw=True)


# ---- the practice round's answers, kept in the quiz notebook's metadata ----------------

PRACTICE_KEY = "practice"  # metadata.course.practice: {"assignment": ..., "questions": ...}


def _encode(value) -> str:
    """A value as the practice round keeps it: not plain text, so that nobody reads the
    practice answers by accident (a study aid, not a secret: they are no graded key)."""
    import base64
    import json
    import zlib

    return base64.b64encode(zlib.compress(json.dumps(value).encode())).decode()


def _decode(text: str):
    import base64
    import json
    import zlib

    return json.loads(zlib.decompress(base64.b64decode(text)))


def _practice_bank(assignment: str) -> dict:
    """{question: [entry, ...]} from the quiz notebook beside this kernel (or this file)."""
    import json
    from pathlib import Path

    for place in (Path.cwd(), Path(__file__).parent):
        for path in sorted(place.glob("*.ipynb")):
            try:
                meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
            except (OSError, ValueError):
                continue
            bank = meta.get("course", {}).get(PRACTICE_KEY, {})
            if bank.get("assignment") == assignment:
                return bank.get("questions", {})
    return {}


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
    folder, notebook = _builder(names, here.name)
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
                'is past its due date (until then, use "mine")'
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


def _builder(names, here: str) -> tuple[str, str]:
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
        cells = engine_cells(_read(path))
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


__all__ += ["call_printed", "check_near"]
