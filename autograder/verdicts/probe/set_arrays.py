"""Probe operations for problem set 3, arrays (inside the kernel): the student's
``unbroadcast`` on arrays the grader drew, each ``Tensor`` operation's closure called on
its own (as lesson 1's ``run_closures`` did), and ``Tensor.backward`` on graphs the probe
makes by hand, so that each exercise is graded without the others.

Arrays travel as {"shape": [...], "flat": [...]}: the grader's inputs are rebuilt here
with numpy, and every array the student's code gives back is sent the same way (or as
plain's {"repr", "type"} when it is not an array of numbers). Every top-level name starts
with ``sa_``: all probe files share one namespace in the kernel.
"""

from __future__ import annotations

import numbers

from .runtime import OPERATIONS, failure, lookup, short_repr

SA_MAX_SIZE = 10_000  # numbers in one array sent back; a larger one is sent as its repr

# The expressions a closure test may build: a and b are Tensors, k a plain number, c a
# numpy array (made from the case's "c", of its "dtype").
SA_EXPRESSIONS = {
    "a + b": lambda a, b, k: a + b,
    "a + k": lambda a, b, k: a + k,
    "a + c": lambda a, b, k: a + k,
    "a + a": lambda a, b, k: a + a,
    "a @ b": lambda a, b, k: a @ b,
    "a @ a": lambda a, b, k: a @ a,
    "a.tanh()": lambda a, b, k: a.tanh(),
    "a.sum()": lambda a, b, k: a.sum(),
}


def sa_make(spec: dict):
    """The grader's array {"shape", "flat"} as a new float numpy array."""
    import numpy as np

    return np.array(spec["flat"], dtype=float).reshape(spec["shape"])


def sa_array(x) -> dict:
    """What the student's code gave, as {"shape", "flat"} when it is an array of numbers
    (a numpy array, a number or nested lists of them), else {"repr", "type"}."""
    import numpy as np

    kinds = (np.ndarray, numbers.Real, list, tuple)
    if isinstance(x, kinds) and not isinstance(x, bool):
        try:
            arr = np.asarray(x, dtype=float)
        except Exception:
            arr = None
        if arr is not None and arr.size <= SA_MAX_SIZE and arr.ndim <= 4:
            return {"shape": [int(n) for n in arr.shape], "flat": [float(v) for v in arr.ravel()]}
    return {"repr": short_repr(x), "type": type(x).__name__}


def sa_op_unbroadcast(ns, function: str, cases: list[dict]) -> list:
    """``function(grad, shape)`` for each case: its result, and whether it changed the
    array it was given."""
    import numpy as np

    fn = lookup(ns, function)
    out = []
    for case in cases:
        grad = sa_make(case["grad"])
        kept = grad.copy()
        try:
            result = fn(grad, tuple(case["shape"]))
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        changed = not (grad.shape == kept.shape and np.array_equal(grad, kept))
        out.append({"result": sa_array(result), "changed": changed})
    return out


def sa_op_closure(ns, tensor: str, cases: list[dict]) -> list:
    """Build one operation (``case["expr"]``) on Tensors made from the grader's arrays,
    then call its closure once, by hand: out.grad is set to ``upstream`` (a number for a
    sum: every element of out.grad), and a.grad, b.grad to ``preset_a``, ``preset_b``
    first, so that an ``=`` where ``+=`` belongs shows. Returns out's data, the grads of
    a and b afterwards, and whether the inputs' data changed. The closure is not called
    when out's shape is not ``out_shape`` (any one-element shape for a sum)."""
    import numpy as np

    Tensor = lookup(ns, tensor)
    out = []
    for case in cases:
        a = Tensor(sa_make(case["a"]))
        b = Tensor(sa_make(case["b"])) if case.get("b") is not None else None
        kept = [t.data.copy() for t in (a, b) if t is not None]
        k = case.get("k")
        if case.get("c") is not None:
            k = sa_make(case["c"]).astype(case.get("dtype") or "float")
        try:
            result = SA_EXPRESSIONS[case["expr"]](a, b, k)
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        entry = {
            "is_tensor": isinstance(result, Tensor),
            "data": sa_array(getattr(result, "data", result)),
            "prev": sa_parents(result, a, b),
        }
        if entry["is_tensor"] and sa_fits(entry["data"], case):
            entry.update(sa_run_closure(result, a, b, case))
        entry["changed"] = any(
            not np.array_equal(t.data, k) for t, k in zip([a, b], kept) if t is not None
        )
        out.append(entry)
    return out


def sa_parents(result, a, b) -> list:
    """[a is among result's _prev, b is] (False for no b, or a _prev that is not a
    collection of nodes)."""
    try:
        prev = list(getattr(result, "_prev", None) or ())
    except Exception:
        prev = []
    return [any(p is a for p in prev), b is not None and any(p is b for p in prev)]


def sa_fits(data: dict, case: dict) -> bool:
    """Whether out's data has the shape the case expects (a sum: any single number)."""
    if "shape" not in data:
        return False
    if case["expr"] == "a.sum()":
        return len(data["flat"]) == 1
    return data["shape"] == case["out_shape"]


def sa_run_closure(result, a, b, case: dict) -> dict:
    """out.grad and the inputs' grads set, the closure called: the grads, or where it
    failed."""
    import numpy as np

    up = case["upstream"]
    if isinstance(up, dict):
        result.grad = sa_make(up)
    else:
        result.grad = np.full(np.shape(result.data), float(up))
    a.grad = sa_make(case["preset_a"])
    if b is not None:
        b.grad = sa_make(case["preset_b"])
    try:
        result._backward()
    except Exception as exc:
        return failure("backprop", exc)
    return {"a_grad": sa_array(a.grad), "b_grad": None if b is None else sa_array(b.grad)}


def sa_hand_closure(out, parents: list, coefs: list, ran: list, index: int):
    """The closure of a node made by hand: out = sum of c * parent (or c * parent.sum()),
    so each parent's grad gains c * out.grad (broadcast over its shape). It notes when it
    runs, so the grader can tell how backward() walked the graph."""

    def _backward():
        ran.append(index)
        for parent, c in zip(parents, coefs):
            parent.grad = parent.grad + c * out.grad

    return _backward


def sa_op_backward(ns, tensor: str, graphs: list[dict]) -> list:
    """The student's ``backward()`` on graphs made here: leaves are Tensors of the
    grader's arrays; every other node is a Tensor whose ``_prev`` and ``_backward`` the
    probe sets (``sa_hand_closure``), so no operation the student wrote takes part.
    Returns every leaf's grad, and the order in which the nodes' closures ran."""
    Tensor = lookup(ns, tensor)
    out = []
    for graph in graphs:
        try:
            leaves = [Tensor(sa_make(spec)) for spec in graph["leaves"]]
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        nodes, ran = list(leaves), []
        for node in graph["nodes"]:
            parents = [nodes[i] for i, _ in node["parents"]]
            coefs = [float(c) for _, c in node["parents"]]
            if node["kind"] == "sum":
                data = coefs[0] * parents[0].data.sum()
            else:
                data = sum(c * p.data for c, p in zip(coefs, parents))
            made = Tensor(data)
            made._prev = tuple(parents)
            made._backward = sa_hand_closure(made, parents, coefs, ran, len(nodes))
            nodes.append(made)
        try:
            nodes[-1].backward()
        except Exception as exc:
            out.append({**failure("backprop", exc), "ran": ran[:1000]})
            continue
        out.append({"grads": [sa_array(leaf.grad) for leaf in leaves], "ran": ran[:1000]})
    return out


OPERATIONS.update(
    {
        "sa_unbroadcast": sa_op_unbroadcast,
        "sa_closure": sa_op_closure,
        "sa_backward": sa_op_backward,
    }
)
