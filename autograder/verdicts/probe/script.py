"""Probe operation for hidden tests written in the notebook (inside the kernel).

A test cell's hidden region runs in the grader (verdicts/region.py), where every name of
the notebook is a stand-in that records what the test does with it. The probe replays
those steps here, in a forked copy of the kernel, with the student's objects, and
answers with a snapshot of every step's result, taken right after the step ran:

- ``{"v": value}``: plain data of exact types (None, bool, int, float, str; lists, and
  tuples, sets and dicts marked ``{"t"}``, ``{"s"}``, ``{"d"}``, of plain data; numpy
  arrays and scalars as ``{"a": nested list, "shape"}``). Nothing of a student's class
  is ever called to make it: a float subclass, an object with ``__float__`` or
  ``__eq__`` is not data;
- ``{"o": type name, "i": the object's number, "n": length or None}``: anything else
  (the student's Values); inside a container (a list of Values, a set ``_prev``) an
  object is kept the same way, so that the grader can tell which object it is;
- ``{"e": "TypeError: ...", "x": [names of the exception's classes]}``: the step raised;
- ``{"u": index}``: the step needs the result of step ``index``, which raised.

An operator between objects that are not data gives an object: an engine operation that
answers with plain data (a ``__sub__`` that returns 0.0 whatever it is given) is refused,
so no object here can turn a value the grader sent into agreement. The grader compares
snapshots with the reference engine; no expected value and no comparison is ever here.
"""

from __future__ import annotations

import operator
import sys

from .runtime import IDENT, OPERATIONS, error_text, lookup

SCRIPT_BINARY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "//": operator.floordiv,
    "%": operator.mod,
    "**": operator.pow,
    "@": operator.matmul,
}
SCRIPT_UNARY = {"neg": operator.neg, "pos": operator.pos}
SCRIPT_MAX_ITEMS = 100_000  # elements of one snapshot
SCRIPT_MAX_TEXT = 10_000  # characters of one string
SCRIPT_DEPTH = 8  # nesting of containers


class ScriptUnavailable(Exception):
    def __init__(self, step: int):
        super().__init__(step)
        self.step = step


class ScriptNotData(Exception):
    pass


def _script_numpy():
    return sys.modules.get("numpy")


def script_data(x, budget: list, depth: int = 0, idents: dict | None = None):
    """``x`` as plain data of exact types, or ScriptNotData (nothing of x's class runs).
    With ``idents``, an object inside a container is kept as {"o", "i", "n"} (its
    identity), and ``budget[1]`` is set to False: the container is not all data."""
    budget[0] -= 1
    if budget[0] < 0 or depth > SCRIPT_DEPTH:
        raise ScriptNotData("too large")
    t = type(x)
    if x is None or t is bool or t is float:
        return x
    if t is int:
        if abs(x) >= 1 << 1000:
            raise ScriptNotData("too large")
        return x
    if t is str:
        if len(x) > SCRIPT_MAX_TEXT:
            raise ScriptNotData("too long")
        return x
    if t is list:
        return [script_data(v, budget, depth + 1, idents) for v in x]
    if t is tuple:
        return {"t": [script_data(v, budget, depth + 1, idents) for v in x]}
    if t is set or t is frozenset:
        return {"s": [script_data(v, budget, depth + 1, idents) for v in x]}
    if t is dict:
        return {
            "d": [
                [
                    script_data(k, budget, depth + 1, idents),
                    script_data(v, budget, depth + 1, idents),
                ]
                for k, v in x.items()
            ]
        }
    np = _script_numpy()
    if np is not None and (t is np.ndarray or t in _script_numpy_scalars(np)):
        if x.dtype.kind not in "biuf":
            raise ScriptNotData("an array of objects")
        budget[0] -= int(x.size)
        if budget[0] < 0:
            raise ScriptNotData("too large")
        return {"a": np.ndarray.tolist(np.asarray(x)), "shape": list(np.shape(x))}
    if idents is not None and depth > 0:
        budget[1] = False
        return {"o": t.__name__[:60], "i": idents.setdefault(IDENT(x), len(idents)), "n": None}
    raise ScriptNotData(t.__name__)


def _script_numpy_scalars(np) -> tuple:
    return (
        np.float64,
        np.float32,
        np.float16,
        np.int64,
        np.int32,
        np.int16,
        np.int8,
        np.uint64,
        np.uint32,
        np.uint16,
        np.uint8,
        np.bool_,
    )


def _script_is_data(x) -> bool:
    budget = [SCRIPT_MAX_ITEMS, True]
    try:
        script_data(x, budget, 0, {})
    except ScriptNotData:
        return False
    return budget[1]


def _script_arg(x, results: list, failed: dict):
    """A step's argument: {"r": k} is step k's result; {"t"}, {"d"} a tuple or a dict."""
    if isinstance(x, list):
        return [_script_arg(v, results, failed) for v in x]
    if isinstance(x, dict):
        if "r" in x:
            k = x["r"]
            if k in failed:
                raise ScriptUnavailable(failed[k])
            return results[k]
        if "t" in x:
            return tuple(_script_arg(v, results, failed) for v in x["t"])
        if "d" in x:
            return {
                _script_arg(k, results, failed): _script_arg(v, results, failed) for k, v in x["d"]
            }
    return x


def _script_step(ns: dict, step: list, results: list, failed: dict):
    kind = step[0]
    args = [_script_arg(a, results, failed) for a in step[1:]]
    if kind == "name":
        return lookup(ns, step[1])
    if kind == "attr":
        return getattr(args[0], step[2])
    if kind == "setattr":
        setattr(args[0], step[2], args[2])
        return None
    if kind == "call":
        return args[0](*args[1], **args[2])
    if kind == "item":
        return args[0][args[1]]
    if kind == "setitem":
        args[0][args[1]] = args[2]
        return None
    if kind == "list":
        return list(args[0])
    if kind in ("op", "unary"):
        operands = args[1:]
        if kind == "op":
            out = SCRIPT_BINARY[step[1]](*operands)
        else:
            out = SCRIPT_UNARY[step[1]](*operands)
        if not all(_script_is_data(v) for v in operands) and _script_is_data(out):
            name = type(next(v for v in operands if not _script_is_data(v))).__name__
            raise TypeError(
                f"an operation on a {name} gave plain data ({type(out).__name__}); "
                "an engine's operations give nodes"
            )
        return out
    raise ValueError(f"no such step: {kind!r}")


def op_script(ns, steps: list) -> list:
    """Run ``steps`` in order on the notebook's objects; a snapshot of each result."""
    results: list = []
    failed: dict = {}  # step -> the step that raised, which it needed
    idents: dict = {}
    snaps = []
    for k, step in enumerate(steps):
        try:
            value = _script_step(ns, step, results, failed)
        except ScriptUnavailable as exc:
            results.append(None)
            failed[k] = exc.step
            snaps.append({"u": exc.step})
            continue
        except BaseException as exc:
            results.append(None)
            failed[k] = k
            names = [c.__name__ for c in type(exc).__mro__][:12]
            snaps.append({"e": error_text(exc, 300), "x": [str(n)[:60] for n in names]})
            continue
        results.append(value)
        try:
            snaps.append({"v": script_data(value, [SCRIPT_MAX_ITEMS, True], 0, idents)})
        except ScriptNotData:
            first = idents.setdefault(IDENT(value), len(idents))
            try:
                n = len(value) if type(value) in (list, tuple, dict, set, frozenset) else None
            except BaseException:
                n = None
            snaps.append({"o": type(value).__name__[:60], "i": first, "n": n})
    return snaps


OPERATIONS["script"] = op_script
