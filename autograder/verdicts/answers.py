"""What the grader believes of a kernel's answer: nothing it has not checked.

The kernel is the student's process. A hidden test's request goes in (verdicts.Kernel),
and what comes back is untrusted input, checked in two steps before any comparison sees
it:

1. ``open_reply``: the answer must be the probe's. The probe signs each answer in its
   forked copy with a key it drew when it was loaded, before any student cell ran (kept
   in its audit hook, probe/guard.py), over the request's nonce, the digest of the
   request it received and the answer's bytes. An answer that is not signed, signed
   wrongly, to another request, or one of several is not the probe's: the check scores
   0 and the submission is flagged for review, since honest code never does that; an
   answer that says the guard recorded an attempt on the probe (``tampering``) scores 0
   and is flagged too. Only answers that can score nothing (a timeout, a crash, an
   error) may come unsigned.
2. ``problem``: the answer must be complete, with the shape the probe gives for the
   request: one entry per item asked for, every key present and no other, exact types
   and lengths. A missing node, gradient or order entry is a wrong answer, never
   agreement. The grader then compares values with the reference engine.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable

from .set_shapes import SET_SHAPES
from .shapes import Malformed, _need, _number, entries, failure, keys, plain, plains, text

MAX_REPLY = 64 * 1024**2  # characters of a signed answer the grader reads
STAGES = {"leaf", "build", "backprop", "call"}
NOT_THE_PROBES = "the kernel's answer did not come from the grading code"


# ---- 1. the probe's own answer ------------------------------------------------------------


def sign(key: bytes, nonce: str, request_text: str, text: str) -> str:
    """The tag the probe puts on an answer ``text`` to the request sent as
    ``request_text`` (probe/runtime.py: ``signed``)."""
    digest = hashlib.sha256(request_text.encode()).hexdigest()
    return hmac.digest(key, f"{nonce}:{digest}:".encode() + text.encode(), "sha256").hex()


def seal(key: bytes, nonce: str, text: str) -> str:
    """Course code for one request, unreadable to anything in the kernel but the probe
    (probe/runtime.py: ``unseal``): hex of the text XORed with HMAC-SHA256 blocks."""
    data = text.encode()
    pad = b"".join(
        hmac.digest(key, f"{nonce}:seal:{i}".encode(), "sha256") for i in range(0, len(data), 32)
    )
    mixed = int.from_bytes(data, "big") ^ int.from_bytes(pad[: len(data)], "big")
    return mixed.to_bytes(len(data), "big").hex()


def request_text(key: bytes | None, request: dict) -> str:
    """The request as the kernel receives it: JSON, the course code in it sealed."""
    nonce = request["nonce"]
    given = [
        {**g, "source": seal(key or b"", nonce, g["source"])} for g in request.get("given", [])
    ]
    return json.dumps({**request, "given": given})


def tampering(notes) -> str:
    """A note for the student and the reviewer from what the probe's guard recorded."""
    if not isinstance(notes, list) or not notes:
        return "the notebook reached into the grading code"
    first = notes[0] if isinstance(notes[0], str) else "?"
    more = f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""
    return f"the notebook reached into the grading code: {first[:120]}{more}"


def open_reply(key: bytes | None, nonce: str, sent: str, replies: list, error: str | None) -> dict:
    """The answer to one request from what the kernel published for it (``replies``: the
    probe's MIME payloads; ``error``: an exception the request cell raised): the probe's
    {"result"} or {"error"}, an unsigned {"timeout"} / {"crashed"} / {"error"} (they score
    nothing), or {"forged": why} when something other than the probe answered."""
    if len(replies) > 1:
        return {"forged": f"{len(replies)} answers to one request"}
    if not replies:
        return {"error": error} if error else {"crashed": "the kernel gave no answer"}
    reply = replies[0]
    if not isinstance(reply, dict):
        return {"forged": "an answer of the wrong kind"}
    if set(reply) == {"timeout"} and _number(reply["timeout"]):
        return reply
    if set(reply) == {"crashed"} and isinstance(reply["crashed"], str):
        return {"crashed": reply["crashed"][:200]}
    if set(reply) != {"answer", "tag"} or not all(isinstance(v, str) for v in reply.values()):
        return {"forged": "an unsigned answer"}
    text, tag = reply["answer"], reply["tag"]
    if key is None:  # the probe never loaded (a kernel that failed at its start)
        return {"crashed": "the grading code could not start in the kernel"}
    if len(text) > MAX_REPLY:
        return {"forged": "an answer longer than the probe sends"}
    if not hmac.compare_digest(sign(key, nonce, sent, text), tag):
        return {"forged": "an answer with a wrong signature"}
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError):
        return {"forged": "a signed answer that is not JSON"}
    if isinstance(answer, dict) and set(answer) == {"tampered"}:
        return {"tampered": tampering(answer["tampered"])}
    if isinstance(answer, dict) and set(answer) == {"result"}:
        return answer
    if isinstance(answer, dict) and set(answer) == {"error"} and isinstance(answer["error"], str):
        return answer
    return {"forged": "a signed answer of the wrong shape"}


# ---- 2. complete answers, of the probe's shape --------------------------------------------


def problem(op: str, args: dict, result) -> str | None:
    """Why ``result`` is not a complete answer of the probe's shape to ``op`` with
    ``args`` (None when it is)."""
    check = SHAPES.get(op)
    if check is None:
        return f"no shape is known for {op!r}"
    try:
        check(args, result)
    except Malformed as exc:
        return str(exc) or "an answer of the wrong shape"
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        return f"an answer of the wrong shape ({type(exc).__name__})"
    return None


def _sizes(program: dict) -> tuple[int, int]:
    return len(program["leaves"]), len(program["leaves"]) + len(program["steps"])


# ---- one shape per operation ----------------------------------------------------------------


def _graphs(args: dict, result) -> None:
    for k, (program, entry) in enumerate(
        zip(args["programs"], entries(result, len(args["programs"]), "graphs"))
    ):
        n_leaves, n_nodes = _sizes(program)
        if failure(entry, {"leaf", "build", "backprop"}, {"data"}):
            if "data" in entry:
                plains(entry["data"], n_nodes, "data")
            continue
        watched = args.get("watch") and k == 0
        keys(entry, {"data", "grads", "reached", "prev"}, {"borrowed"} if watched else set())
        plains(entry["data"], n_nodes, "data")
        plains(entry["grads"], n_leaves, "grads")
        _need(
            isinstance(entry["reached"], list)
            and len(entry["reached"]) == n_nodes
            and all(isinstance(r, bool) for r in entry["reached"]),
            "reached: not one true or false per node",
        )
        if entry["prev"] is not None:
            text(entry["prev"], 40)
        if "borrowed" in entry:
            _strings(entry["borrowed"])


def _strings(x, limit: int = 20) -> None:
    _need(isinstance(x, list) and len(x) <= limit, "a list of names too long")
    for item in x:
        text(item, 200)


def _index(x, n: int, allow: tuple = ()) -> None:
    _need(
        (isinstance(x, int) and not isinstance(x, bool) and 0 <= x < n) or x in allow,
        "a position out of range",
    )


def _order(args: dict, result) -> None:
    programs = args["programs"]
    for program, entry in zip(programs, entries(result, len(programs), "orders")):
        if failure(entry, {"build", "call"}):
            continue
        keys(
            entry,
            {"nodes", "program"},
            {"order", "strangers", "returned", "recursion", "limit", "borrowed"},
        )
        nodes = entry["nodes"]
        _need(isinstance(nodes, list), "nodes: not a list")
        for node in nodes:
            _need(isinstance(node, list) and len(node) == 3, "a node of the wrong shape")
            index, data, parents = node
            _need(
                index is None or (isinstance(index, int) and not isinstance(index, bool)),
                "a bad program index",
            )
            plain(data)
            _need(isinstance(parents, list), "parents: not a list")
            for p in parents:
                _index(p, len(nodes))
        at = entry["program"]
        _need(
            isinstance(at, list) and len(at) == _sizes(program)[1],
            "program: not one position per node built",
        )
        for p in at:
            _index(p, len(nodes))
        _need(len(set(at)) == len(at), "program: two nodes in one place")
        outcome = [k for k in ("order", "returned", "recursion", "limit") if k in entry]
        _need(len(outcome) == 1, "an order entry with no single outcome")
        if "order" in entry:
            _need(isinstance(entry["order"], list), "order: not a list")
            for p in entry["order"]:
                _index(p, len(nodes), (-1,))
            _strings(entry.get("strangers", []), 3)
        if "returned" in entry:
            text(entry["returned"], 200)
        for flag in ("recursion", "limit"):
            _need(entry.get(flag, True) is True, f"{flag}: not true")
        if "borrowed" in entry:
            _strings(entry["borrowed"])


def _zero_grad(args: dict, result) -> None:
    for program, entry in zip(args["programs"], entries(result, len(args["programs"]), "graphs")):
        if failure(entry, {"call"}):
            continue
        keys(entry, {"nodes"})
        _need(isinstance(entry["nodes"], list), "nodes: not a list")
        for node in entry["nodes"]:
            keys(node, {"data", "after", "grad", "leaf", "root", "index"})
            for name in ("data", "after", "grad"):
                plain(node[name])
            _need(all(isinstance(node[k], bool) for k in ("leaf", "root")), "not a bool")
            _index(node["index"], _sizes(program)[1], (None,))
        indices = [n["index"] for n in entry["nodes"] if n["index"] is not None]
        _need(
            sorted(indices) == list(range(_sizes(program)[1])), "nodes: not every node built, once"
        )


def _hand(args: dict, result) -> None:
    for data, entry in zip(args["graphs"], entries(result, len(args["graphs"]), "graphs")):
        if failure(entry, {"call"}):
            continue
        keys(entry, set(data))
        for value in entry.values():
            plain(value)


def _calls(args: dict, result) -> None:
    for call, entry in zip(args["calls"], entries(result, len(args["calls"]), "calls")):
        if failure(entry, {"call"}):
            continue
        keys(entry, {"result", "args"})
        plain(entry["result"])
        _need(
            isinstance(entry["args"], list) and len(entry["args"]) == len(call["args"]),
            "args: the wrong length",
        )
        for a in entry["args"]:
            plain(a)


def _neuron(args: dict, result) -> None:
    for case, entry in zip(args["cases"], entries(result, len(args["cases"]), "cases")):
        if entry.get("failed") == "call":
            failure(entry, {"call"})
            continue
        required = {"data", "grads"}
        if "failed" in entry:
            failure(entry, {"backprop"}, required)
        else:
            keys(entry, required)
        plain(entry["data"])
        grads = entry["grads"]
        keys(grads, {"xs", "ws", "b"})
        plains(grads["xs"], len(case["xs"]), "xs")
        plains(grads["ws"], len(case["ws"]), "ws")
        plain(grads["b"])


def _values(args: dict, result) -> None:
    keys(result, set(args["names"]))
    for value in result.values():
        if isinstance(value, dict) and set(value) == {"callable"}:
            _need(value["callable"] is True, "a bad callable mark")
        else:
            plain(value)


def _function_at(args: dict, result) -> None:
    for entry in entries(result, len(args["points"]), "points"):
        if not failure(entry, {"call"}):
            keys(entry, {"result"})
            plain(entry["result"])


def _module_base(args: dict, result) -> None:
    keys(result, {"grads", "data"}, {"parameters", "parameters_failed", "zero_grad_failed"})
    _need(("parameters" in result) != ("parameters_failed" in result), "parameters twice")
    if "parameters" in result:
        plain(result["parameters"])
    for name in ("parameters_failed", "zero_grad_failed"):
        if name in result:
            text(result[name])
    plains(result["grads"], 2, "grads")
    plains(result["data"], 2, "data")


def _module(args: dict, result) -> None:
    if isinstance(result, dict) and set(result) == {"parameters"}:
        return text(result["parameters"])
    n = len(args["weights"])
    optional = {"runs", "zeroed", "zero_grad_failed"}
    if args.get("layout") is not None:
        optional.add("layout")
    keys(result, {"listed", "count", "again", "not_values", "unique"}, optional)
    _need(isinstance(result["listed"], bool), "listed: not a bool")
    for name in ("count", "again"):
        _need(
            isinstance(result[name], int)
            and not isinstance(result[name], bool)
            and result[name] >= 0,
            f"{name}: not a count",
        )
    _strings(result["not_values"], 1)
    _need(isinstance(result["unique"], bool), "unique: not a bool")
    if "layout" in result and result["layout"] is not None:
        _need(isinstance(result["layout"], list), "layout: not a list")
    complete = not result["not_values"] and result["unique"] and result["count"] == n
    _need(("runs" in result) == complete, "runs missing or unexpected")
    if not complete:
        return _need(not ({"zeroed", "zero_grad_failed"} & set(result)), "unexpected zeroing")
    for entry in entries(result["runs"], len(args["runs"]), "runs"):
        if entry.get("failed") == "call":
            failure(entry, {"call"})
            continue
        _module_run(entry, n)
    if args.get("zero_grad"):
        _need(("zeroed" in result) != ("zero_grad_failed" in result), "zero_grad: no outcome")
        if "zeroed" in result:
            plains(result["zeroed"], n, "zeroed")
    else:
        _need(not ({"zeroed", "zero_grad_failed"} & set(result)), "unexpected zeroing")


def _module_run(entry, n: int) -> None:
    optional = {"grads", "x_grads"}
    if "failed" in entry:
        failure(entry, {"backprop"}, {"shape", "data"})
    else:
        keys(entry, {"shape", "data"}, optional)
    shape = entry["shape"]
    _need(shape == "value" or isinstance(shape, (int, str)), "a bad shape")
    plains(entry["data"])
    if "grads" in entry:
        plains(entry["grads"], n, "grads")
        _need("x_grads" in entry, "x_grads missing")
        if entry["x_grads"] is not None:
            plains(entry["x_grads"])


def _loss(args: dict, result) -> None:
    for case, entry in zip(args["cases"], entries(result, len(args["cases"]), "cases")):
        if entry.get("failed") == "call":
            failure(entry, {"call"})
            continue
        value = {"grads", "param_grads"}
        base = {"data", "is_value"}
        if "failed" in entry:
            failure(entry, {"backprop"}, base | value)
        else:
            keys(entry, base, value)
        plain(entry["data"])
        _need(isinstance(entry["is_value"], bool), "is_value: not a bool")
        _need(
            (value <= set(entry)) == entry["is_value"]
            and (entry["is_value"] or not (value & set(entry))),
            "grads missing",
        )
        if entry["is_value"]:
            plains(entry["grads"], len(case["preds"]), "grads")
            plains(entry["param_grads"], len(case.get("params") or ()), "param_grads")


def _train(args: dict, result) -> None:
    for run, entry in zip(args["runs"], entries(result, len(args["runs"]), "runs")):
        if failure(entry, {"call"}):
            continue
        right = {"right"} if run["model"] == "features" else set()
        keys(entry, {"returned", "params", "sizes", "mismatched", "used", "printed"} | right)
        plain(entry["returned"])
        plains(entry["params"], None, "params")
        _need(
            isinstance(entry["sizes"], list)
            and len(entry["sizes"]) <= 1000
            and all(isinstance(s, int) and not isinstance(s, bool) for s in entry["sizes"]),
            "sizes: not counts",
        )
        for name in ("mismatched", "used", *right):
            _need(
                isinstance(entry[name], int) and not isinstance(entry[name], bool),
                f"{name}: not a count",
            )
        _need(
            isinstance(entry["printed"], list) and len(entry["printed"]) <= 200, "printed: too long"
        )
        for line in entry["printed"]:
            text(line, 200)


def _sg_answers(args: dict, result) -> None:
    _values(args, result)


def _script_value(x, budget: list, depth: int = 0) -> None:
    """Plain data as the probe's ``script_data`` gives it, within its bounds."""
    budget[0] -= 1
    _need(budget[0] >= 0 and depth <= 8, "a snapshot larger than the probe sends")
    if x is None or isinstance(x, (bool, int, float)):
        _need(not isinstance(x, int) or isinstance(x, bool) or abs(x) < 1 << 1000, "a huge int")
        return
    if isinstance(x, str):
        return _need(len(x) <= 10_000, "a string longer than the probe sends")
    if isinstance(x, list):
        for item in x:
            _script_value(item, budget, depth + 1)
        return
    _need(isinstance(x, dict) and len(x) in (1, 2, 3), "a value of a kind the probe never sends")
    if set(x) == {"o", "i", "n"}:
        text(x["o"], 60)
        return _need(_script_object(x), "an object of the wrong shape")
    if set(x) == {"a", "shape"}:
        _need(
            isinstance(x["shape"], list)
            and all(isinstance(n, int) and not isinstance(n, bool) for n in x["shape"]),
            "an array without its shape",
        )
        return _script_array(x["a"], budget, len(x["shape"]))
    (kind,) = x
    _need(kind in ("t", "s", "d") and isinstance(x[kind], list), "an unknown container")
    for item in x[kind]:
        if kind == "d":
            _need(isinstance(item, list) and len(item) == 2, "a dict entry that is no pair")
            for part in item:
                _script_value(part, budget, depth + 1)
        else:
            _script_value(item, budget, depth + 1)


def _script_object(x) -> bool:
    return (
        isinstance(x["i"], int)
        and not isinstance(x["i"], bool)
        and 0 <= x["i"] < 1 << 40
        and (x["n"] is None or (isinstance(x["n"], int) and not isinstance(x["n"], bool)))
    )


def _script_array(x, budget: list, dims: int) -> None:
    budget[0] -= 1
    _need(budget[0] >= 0, "an array larger than the probe sends")
    if dims == 0:
        return _need(isinstance(x, (bool, int, float)), "an array of things not numbers")
    _need(isinstance(x, list), "an array of the wrong depth")
    for item in x:
        _script_array(item, budget, dims - 1)


def _script(args: dict, result) -> None:
    """One snapshot per step: data, an object, the error a step raised, or unavailable."""
    steps = args["steps"]
    budget = [4 * 100_000 + len(steps)]
    for k, snap in enumerate(entries(result, len(steps), "snapshots")):
        _need(isinstance(snap, dict), "a snapshot that is not a mapping")
        if set(snap) == {"v"}:
            _script_value(snap["v"], budget)
        elif set(snap) == {"o", "i", "n"}:
            text(snap["o"], 60)
            _need(_script_object(snap), "an object snapshot of the wrong shape")
        elif set(snap) == {"e", "x"}:
            text(snap["e"], 300)
            _strings(snap["x"], 12)
            _need(len(snap["x"]) >= 1, "an error without its class")
        elif set(snap) == {"u"}:
            _index(snap["u"], k)
        else:
            raise Malformed("a snapshot of an unknown kind")


SHAPES: dict[str, Callable[[dict, object], None]] = {
    "graphs": _graphs,
    "order": _order,
    "zero_grad": _zero_grad,
    "hand": _hand,
    "calls": _calls,
    "neuron": _neuron,
    "values": _values,
    "function_at": _function_at,
    "module_base": _module_base,
    "module": _module,
    "loss": _loss,
    "train": _train,
    "sg_answers": _sg_answers,
    "script": _script,
    **SET_SHAPES,
}
