"""Probe operations for 07_set_gradients (problem set 1, gradients at work), inside the kernel.

Every top-level name here starts with ``sg_``: the probe's files share one namespace.

The operations build the grader's inputs with the notebook's own classes, call the
student's functions and report plain numbers: softmax and cross-entropy on logits made
of Values (their outputs, and every logit's gradient), grad_check on functions written
by the grader and on the engine it names, which methods the student's ``Fixed`` class
defines itself, and the notebook's answers. Nothing here knows a right answer.
"""

from __future__ import annotations

import math

from .runtime import OPERATIONS, data_of, error_text, failure, grad_of, lookup, plain, short_repr


def sg_is_value(x) -> bool:
    return hasattr(x, "data") and hasattr(x, "grad") and hasattr(x, "backward")


def sg_weighted_sum(outputs: list, weights: list[float]):
    """sum(w_i * out_i) built with the outputs' own operations (a loss over a softmax)."""
    total = outputs[0] * weights[0]
    for out, w in zip(outputs[1:], weights[1:]):
        total = total + out * w
    return total


def sg_softmax(ns, value: str, function: str, cases: list[dict]) -> list:
    """softmax(logits) on leaf Values: its outputs, and the logits' gradients of the
    weighted sum of the outputs with the case's weights (one backward())."""
    Value, fn = lookup(ns, value), lookup(ns, function)
    out = []
    for case in cases:
        logits = [Value(z) for z in case["logits"]]
        try:
            probs = fn(list(logits))
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        if not isinstance(probs, (list, tuple)):
            out.append({"returned": short_repr(probs)})
            continue
        entry = {
            "data": [data_of(p) for p in probs],
            "values": all(sg_is_value(p) for p in probs),
        }
        if entry["values"] and len(probs) == len(logits):
            try:
                sg_weighted_sum(list(probs), case["weights"]).backward()
            except Exception as exc:
                entry.update(failure("backprop", exc))
            entry["grads"] = [grad_of(z) for z in logits]
        out.append(entry)
    return out


def sg_cross_entropy(ns, value: str, function: str, cases: list[dict]) -> list:
    """cross_entropy(batch, labels) on a batch of lists of leaf Values: the loss, and
    every logit's gradient after backward()."""
    Value, fn = lookup(ns, value), lookup(ns, function)
    out = []
    for case in cases:
        batch = [[Value(z) for z in row] for row in case["logits"]]
        try:
            loss = fn([list(row) for row in batch], list(case["labels"]))
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        entry = {"data": data_of(loss), "is_value": sg_is_value(loss)}
        if entry["is_value"]:
            try:
                loss.backward()
            except Exception as exc:
                entry.update(failure("backprop", exc))
            entry["grads"] = [[grad_of(z) for z in row] for row in batch]
        out.append(entry)
    return out


def sg_function(source: str):
    """A function from the grader's lambda text, where exp, tanh and plain work on
    numbers and on Values alike (plain(v) is v's number: a path the engine cannot see)."""
    helpers = {
        "exp": lambda v: v.exp() if hasattr(v, "exp") else math.exp(v),
        "tanh": lambda v: v.tanh() if hasattr(v, "tanh") else math.tanh(v),
        "plain": lambda v: getattr(v, "data", v),
    }
    return eval(source, helpers)


def sg_grad_check(ns, function: str, calls: list[dict]) -> list:
    """grad_check(f, xs[, engine=...][, h=...]) for each call, f made from the grader's
    text and the engine a class of the notebook; its result, and xs afterwards."""
    fn = lookup(ns, function)
    out = []
    for call in calls:
        xs = list(call["xs"])
        kwargs = {}
        if call.get("engine") is not None:
            kwargs["engine"] = lookup(ns, call["engine"])
        if call.get("h") is not None:
            kwargs["h"] = call["h"]
        try:
            result = fn(sg_function(call["lambda"]), xs, **kwargs)
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        out.append({"result": plain(result), "xs": plain(xs)})
    return out


def sg_overrides(ns, cls: str, base: str, names: list[str]) -> dict:
    """Which of ``names`` the class ``cls`` has other than from ``base`` (the methods the
    student wrote), and the class of what each of them returns on small inputs."""
    if cls not in ns:
        return {"defined": False}
    fixed, original = ns[cls], lookup(ns, base)
    if not isinstance(fixed, type):
        return {"defined": True, "class": False, "what": short_repr(fixed)}
    own = [
        name
        for name in names
        if getattr(fixed, name, None) is not None
        and getattr(fixed, name, None) is not getattr(original, name, None)
    ]
    made = {}
    for name in own:
        try:
            node = sg_sample(fixed, name)
            made[name] = type(node).__name__
        except Exception as exc:
            made[name] = f"raised {error_text(exc, 80)}"
    return {"defined": True, "class": True, "own": own, "made": made}


def sg_sample(cls, name: str):
    """The node ``name`` makes from small inputs of ``cls``: a reflected method with a
    number on the left, a binary one with two nodes, a function on one node."""
    a, b = cls(1.5), cls(0.5)
    if name.startswith("__r") and name.endswith("__"):
        return getattr(b, name)(2.0)
    if name.startswith("__") and name not in ("__neg__",):
        return getattr(a, name)(b) if name != "__pow__" else a**2
    return getattr(a, name)()


def sg_answers(ns, names: list[str]) -> dict:
    """The notebook's value of each name: plain values, and a set as its sorted items."""
    out = {}
    for name in names:
        value = ns.get(name)
        if isinstance(value, (set, frozenset)):
            try:
                value = sorted(value, key=repr)
            except Exception:
                value = list(value)
        out[name] = {"callable": True} if callable(value) else plain(value)
    return out


OPERATIONS.update(
    {
        "sg_softmax": sg_softmax,
        "sg_cross_entropy": sg_cross_entropy,
        "sg_grad_check": sg_grad_check,
        "sg_overrides": sg_overrides,
        "sg_answers": sg_answers,
    }
)
