"""Probe operations for lessons 1 to 3 and the quizzes: build programs with the
student's engine, sort, zero, call functions, read answers (inside the kernel)."""

from __future__ import annotations

import contextlib
import gc
import math
import sys
import types

from .runtime import (
    IDENT,
    OPERATIONS,
    StepFailed,
    build,
    data_of,
    failure,
    grad_of,
    graph_nodes,
    lookup,
    plain,
    privileged,
    run_closures,
    short_repr,
)


def op_graphs(
    ns, value: str, programs: list[dict], backprop: str = "backward", watch: bool = False
) -> list:
    """Build each program with the student's engine and backpropagate from its output:
    with ``run_closures`` from ``seed`` ("closures") or with ``backward()``. ``passes``
    builds it again on the same leaves and backpropagates again (gradients add up);
    ``repeat`` calls backward() again on the same graph. Returns, per program, every
    node's data and every leaf's grad, or where it failed. With ``watch``, the first
    program's entry also says which of coursekit's graph walks backward() called."""
    Value = lookup(ns, value)
    out = []
    for number, program in enumerate(programs):
        try:
            xs, nodes = build(Value, program)
        except StepFailed as exc:
            out.append(failure("build", exc.error, exc.step))
            continue
        except Exception as exc:
            out.append(failure("leaf", exc))
            continue
        data = [data_of(n) for n in nodes]
        borrowed: list[str] = []
        try:
            for k in range(program.get("passes", 1)):
                if k:
                    xs, nodes = build(Value, program, xs)
                for _ in range(program.get("repeat", 1)):
                    if backprop == "closures":
                        run_closures(nodes[-1], program.get("seed", 1.0))
                    elif watch and number == 0:
                        _, borrowed = trapped(set_traps(), nodes[-1].backward)
                    else:
                        nodes[-1].backward()
        except StepFailed as exc:
            out.append(failure("build", exc.error, exc.step))
            continue
        except Exception as exc:
            out.append({**failure("backprop", exc), "data": data})
            continue
        entry = {"data": data, "grads": [grad_of(x) for x in xs], **structure(nodes)}
        if watch and number == 0:
            entry["borrowed"] = borrowed
        out.append(entry)
    return out


def structure(nodes: list) -> dict:
    """What the graph walk sees of a program's nodes (``nodes[-1]`` its output): which of
    them it reaches from the output through ``_prev`` (``reached``), and what the output
    keeps there (``prev``: a type name, or None when it has no ``_prev``). The grader
    compares this with the program it drew, before it reads a slip into the numbers."""
    try:
        walked = {IDENT(n) for n in graph_nodes(nodes[-1])}
        prev = getattr(nodes[-1], "_prev", _MISSING)
    except Exception:  # a _prev that raises when read: the walk reaches nothing
        walked, prev = set(), _MISSING
    return {
        "reached": [IDENT(n) in walked for n in nodes],
        "prev": None if prev is _MISSING else type(prev).__name__[:40],
    }


_MISSING = object()


def op_order(ns, value: str, function: str, programs: list[dict]) -> list:
    """The student's topological sort on each program's output. Returns the graph as
    found through ``_prev`` together with every node the probe built (each node's program
    index or None, data and parents), where each program node is in it (``program``), and
    the order as positions in it (-1: a node it does not hold). The grader checks the
    order against the program, which it made itself, so a ``_prev`` that hides nodes
    hides nothing. A program marked ``deep`` is sorted under a recursion limit a few
    hundred calls above the caller's: a search that nests a call per node fails."""
    Value, topo = lookup(ns, value), lookup(ns, function)
    called = set_traps()
    out = []
    for program in programs:
        try:
            _, nodes = build(Value, program)
        except Exception as exc:
            out.append(failure("build", getattr(exc, "error", exc), getattr(exc, "step", None)))
            continue
        for i, label in enumerate(program.get("labels") or ()):
            _label(nodes[i], label)
        root = nodes[-1]
        graph = graph_nodes(root)
        where = {IDENT(n): i for i, n in enumerate(graph)}
        for node in nodes:  # the program's own nodes, whatever _prev says
            if IDENT(node) not in where:
                where[IDENT(node)] = len(graph)
                graph.append(node)
        program_index = {IDENT(n): i for i, n in enumerate(nodes)}
        entry = {
            "nodes": [
                [
                    program_index.get(IDENT(n)),
                    data_of(n),
                    [where[IDENT(p)] for p in _parents(n) if IDENT(p) in where],
                ]
                for n in graph
            ],
            "program": [where[IDENT(n)] for n in nodes],
        }
        out.append(entry)
        try:
            order, entry["borrowed"] = trapped(called, topo, root, deep=program.get("deep", False))
        except RecursionError:
            entry["recursion"] = True
            continue
        except LimitChanged:
            entry["limit"] = True
            continue
        except Exception as exc:
            out[-1] = failure("call", exc)
            continue
        if isinstance(order, (list, tuple)):
            entry["order"] = [where.get(IDENT(n), -1) for n in order]
            entry["strangers"] = [
                short_repr(data_of(n), 30) for n in order if IDENT(n) not in where
            ][:3]
        else:
            entry["returned"] = type(order).__name__
    return out


TRAP_ENTRY = "autograder_probe"  # sys.modules[TRAP_ENTRY].borrowed: walks a copy called
SET_LIMIT, GET_LIMIT, FRAME = sys.setrecursionlimit, sys.getrecursionlimit, sys._getframe
BORROWABLE = ("graph_nodes", "run_closures")  # coursekit's walks: not the student's own
TRAPS = {
    name: compile(
        f"def {name}(*args, **kwargs):\n"
        f"    __import__('sys').modules[{TRAP_ENTRY!r}].borrowed.append({name!r})\n"
        f"    raise RuntimeError(\"coursekit's {name} is the course's: write your own walk\")\n",
        "<autograder trap>",
        "exec",
    ).co_consts[0]
    for name in BORROWABLE
}


class LimitChanged(Exception):
    """The student's function changed the recursion limit the probe had set."""


def course_walks() -> dict[bytes, str]:
    """{bytecode: name} of coursekit's graph walks, compiled from the course's copy next
    to the notebook (read when the probe is loaded): a pasted or renamed copy of a walk
    runs the same bytecode, whatever it is called and wherever it was defined."""
    global WALKS
    if WALKS is not None:
        return WALKS
    found = sys.modules.get("coursekit")
    places = ["coursekit.py", getattr(found, "__file__", None)]
    places += [f"{folder}/coursekit.py" for folder in sys.path if isinstance(folder, str)]
    for path in places:
        try:
            with open(path) as fh:
                code = compile(fh.read(), path, "exec")
        except (OSError, SyntaxError, TypeError, ValueError):
            continue
        WALKS = {
            c.co_code: c.co_name
            for c in code.co_consts
            if isinstance(c, types.CodeType) and c.co_name in BORROWABLE
        }
        return WALKS
    return {}


WALKS: dict[bytes, str] | None = None


def set_traps() -> list[str]:
    """Replace coursekit's graph walks, and every copy of them, by traps (in this forked
    copy only); the list the traps note their names in. Whether a student's function
    borrows a walk is then a matter of behaviour (it ran one), not of introspecting its
    calls or of file names."""
    entry = sys.modules.get(TRAP_ENTRY)
    if entry is None:  # the probe was not loaded as in a kernel (tests): in this copy only
        entry = sys.modules[TRAP_ENTRY] = types.ModuleType(TRAP_ENTRY)
    called: list[str] = []
    entry.borrowed = called
    walks = course_walks()
    mine = (globals(), graph_nodes.__globals__)  # one namespace once loaded in a kernel
    with privileged():  # no student code runs here (type(), not isinstance: no __class__)
        for obj in gc.get_objects():
            if type(obj) is not types.FunctionType or any(obj.__globals__ is g for g in mine):
                continue  # the probe's own walk is coursekit's too
            name = walks.get(obj.__code__.co_code)
            if name is None and obj.__code__.co_filename.endswith("coursekit.py"):
                name = obj.__name__ if obj.__name__ in BORROWABLE else None
            if name is not None:
                with contextlib.suppress(ValueError):  # a copy made into a closure: left
                    obj.__code__ = TRAPS[name]
    return called


def trapped(called: list[str], fn, *args, deep: bool = False):
    """``fn(*args)`` and which trapped walks it called. With ``deep``, under a recursion
    limit 250 calls above this one, which it must leave as it is (``LimitChanged``: it
    asked to change it, or changed it)."""
    del called[:]
    if not deep:
        return fn(*args), sorted(set(called))
    with privileged():
        frame = FRAME()
    depth = 0
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    limit = depth + 250
    SET_LIMIT(limit)
    asked: list = []
    sys.setrecursionlimit = asked.append  # in this copy the limit is the grader's
    try:
        result = fn(*args)
    except RecursionError:
        if asked:  # it hit the limit it asked to raise
            raise LimitChanged from None
        raise
    finally:
        sys.setrecursionlimit = SET_LIMIT
    if asked or GET_LIMIT() != limit:
        raise LimitChanged
    return result, sorted(set(called))


def _label(node, text: str) -> None:
    with contextlib.suppress(Exception):  # a class without a label slot: fine
        node.label = text


def _parents(node) -> list:
    return list(getattr(node, "_prev", ()) or ())


def op_zero_grad(ns, value: str, function: str, programs: list[dict]) -> list:
    """Fill every node's grad with 1, 2, 3...; run the student's zero_grad(root); return
    each node's data before and after, its grad after, and whether it is a leaf."""
    Value, zero_grad = lookup(ns, value), lookup(ns, function)
    out = []
    for program in programs:
        _, nodes = build(Value, program)
        for i, node in enumerate(nodes):
            _label(node, program["labels"][i])
        root = nodes[-1]
        graph = graph_nodes(root)
        seen = {IDENT(n) for n in graph}
        graph += [n for n in nodes if IDENT(n) not in seen]  # whatever _prev says
        before = [data_of(n) for n in graph]
        for i, node in enumerate(graph):
            node.grad = 1.0 + i
        try:
            zero_grad(root)
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        program_index = {IDENT(n): i for i, n in enumerate(nodes)}
        out.append(
            {
                "nodes": [
                    {
                        "data": b,
                        "after": data_of(n),
                        "grad": grad_of(n),
                        "leaf": not _parents(n),
                        "root": n is root,
                        "index": program_index.get(IDENT(n)),
                    }
                    for b, n in zip(before, graph)
                ]
            }
        )
    return out


def op_hand(ns, function: str, graphs: list[dict]) -> list:
    """Lesson 1's backprop_by_hand on plain nodes with the given data; their grads after."""
    fn = lookup(ns, function)

    class Node:
        def __init__(self, data):
            self.data, self.grad = data, 0.0

    class Graph:
        pass

    out = []
    for data in graphs:
        g = Graph()
        for name, value in data.items():
            setattr(g, name, Node(value))
        try:
            fn(g)
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        out.append({name: grad_of(getattr(g, name, None)) for name in data})
    return out


def make_function(source: str):
    """A function from the grader's lambda text, where sin, cos, exp and plain work on
    numbers and on Values alike."""
    helpers = {
        "sin": lambda v: v.sin() if hasattr(v, "sin") else math.sin(v),
        "cos": lambda v: v.cos() if hasattr(v, "cos") else math.cos(v),
        "exp": lambda v: v.exp() if hasattr(v, "exp") else math.exp(v),
        "tanh": lambda v: v.tanh() if hasattr(v, "tanh") else math.tanh(v),
        "plain": lambda v: getattr(v, "data", v),
    }
    return eval(source, helpers)


def op_calls(ns, function: str, calls: list[dict]) -> list:
    """``function(*args)`` for each call; an argument {"lambda": text} is a function made
    from the grader's text. Returns each result (and the list arguments afterwards, to
    see whether the function changed them), or the error."""
    fn = lookup(ns, function)
    out = []
    for call in calls:
        args = [
            make_function(a["lambda"])
            if isinstance(a, dict)
            else (list(a) if isinstance(a, list) else a)
            for a in call["args"]
        ]
        try:
            result = fn(*args, **call.get("kwargs", {}))
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        out.append(
            {
                "result": plain(result),
                "args": [plain(a) if isinstance(a, list) else None for a in args],
            }
        )
    return out


def op_neuron(ns, value: str, function: str, cases: list[dict]) -> list:
    """Lesson 3's neuron(xs, ws, b) on leaf Values; its output and every leaf's grad."""
    Value, fn = lookup(ns, value), lookup(ns, function)
    out = []
    for case in cases:
        try:
            xs = [Value(v) for v in case["xs"]]
            ws = [Value(v) for v in case["ws"]]
            b = Value(case["b"])
            o = fn(xs, ws, b)
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        entry = {"data": data_of(o)}
        try:
            o.backward()
        except Exception as exc:
            entry.update(failure("backprop", exc))
        entry["grads"] = {
            "xs": [grad_of(v) for v in xs],
            "ws": [grad_of(v) for v in ws],
            "b": grad_of(b),
        }
        out.append(entry)
    return out


def op_values(ns, names: list[str]) -> dict:
    """The notebook's value of each name (quiz answers), as plain values."""
    return {
        name: plain(ns.get(name)) if not callable(ns.get(name)) else {"callable": True}
        for name in names
    }


def op_function_at(ns, name: str, points: list[list]) -> list:
    """The notebook's function ``name`` at each point (a function answer in a quiz)."""
    fn = lookup(ns, name)
    out = []
    for args in points:
        try:
            out.append({"result": plain(fn(*args))})
        except Exception as exc:
            out.append(failure("call", exc))
    return out


OPERATIONS.update(
    {
        "graphs": op_graphs,
        "order": op_order,
        "zero_grad": op_zero_grad,
        "hand": op_hand,
        "calls": op_calls,
        "neuron": op_neuron,
        "values": op_values,
        "function_at": op_function_at,
    }
)
