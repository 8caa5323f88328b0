"""Probe operations for lessons 5 and 5b (05_mlp, 05_training): modules, losses and the
training loop, on models and losses made here that depend on nothing else the student
wrote (inside the kernel)."""

from __future__ import annotations

import contextlib
import io

from .runtime import (
    IDENT,
    OPERATIONS,
    data_of,
    error_text,
    failure,
    grad_of,
    lookup,
    plain,
    short_repr,
)


def op_module_base(ns, value: str, module: str) -> dict:
    """Module's defaults: Module().parameters(), and zero_grad() on a subclass with two
    parameters whose grads are 3 and -0.5."""
    Value, Module = lookup(ns, value), lookup(ns, module)
    out: dict = {}
    try:
        out["parameters"] = plain(list(Module().parameters()))
    except Exception as exc:
        out["parameters_failed"] = error_text(exc)

    class Pair(Module):
        def __init__(self):
            self.a, self.b = Value(1.5), Value(-2.0)

        def parameters(self):
            return [self.a, self.b]

    pair = Pair()
    pair.a.grad, pair.b.grad = 3.0, -0.5
    try:
        pair.zero_grad()
    except Exception as exc:
        out["zero_grad_failed"] = error_text(exc)
    out["grads"] = [grad_of(pair.a), grad_of(pair.b)]
    out["data"] = [data_of(pair.a), data_of(pair.b)]
    return out


def op_module(
    ns,
    value: str,
    build: str,
    weights: list[float],
    runs: list[dict],
    layout: list[str] | None = None,
    zero_grad: bool = False,
) -> dict:
    """Build a module with the notebook's classes (``build`` is an expression such as
    "Neuron(3, nonlin=False)"), describe its parameters() (called twice: whether the first
    answer is a list or tuple, the counts, Values only, each once), set their data to
    ``weights`` in parameters() order, then for each run call it on x (Values when
    ``as_values``), backpropagate from output ``i`` and return outputs and gradients.
    ``layout`` names attribute expressions ("m.w", "m.b") whose Values, flattened, are
    compared with the order of parameters(); ``zero_grad`` calls it at the end."""
    Value = lookup(ns, value)
    module = eval(build, dict(ns))
    first = module.parameters()
    try:
        params = list(first)
    except TypeError:
        return {"parameters": short_repr(first)}
    again = list(module.parameters())
    info = {
        "listed": isinstance(first, (list, tuple)),
        "count": len(params),
        "again": len(again),
        "not_values": [
            short_repr(p) for p in params if not (hasattr(p, "data") and hasattr(p, "grad"))
        ][:1],
        "unique": len({IDENT(p) for p in params}) == len(params),
    }
    if layout is not None:  # each parameter's place in the layout (-1: not in it)
        try:
            expected = _flatten([eval(expr, {"m": module}) for expr in layout])
            where = {IDENT(p): i for i, p in enumerate(expected)}
            info["layout"] = [where.get(IDENT(p), -1) for p in params]
        except Exception:
            info["layout"] = None
    if info["not_values"] or not info["unique"] or len(params) != len(weights):
        return info
    for p, w in zip(params, weights):
        p.data = w
    info["runs"] = []
    for run in runs:
        xs = [Value(v) for v in run["x"]] if run["as_values"] else list(run["x"])
        try:
            got = module(xs)
        except Exception as exc:
            info["runs"].append(failure("call", exc))
            continue
        entry = {
            "shape": "value"
            if hasattr(got, "data")
            else (len(got) if isinstance(got, (list, tuple)) else short_repr(got))
        }
        outs = (
            [got] if hasattr(got, "data") else list(got) if isinstance(got, (list, tuple)) else []
        )
        entry["data"] = [data_of(o) for o in outs]
        i = run["backward_from"]
        if i < len(outs) and hasattr(outs[i], "backward"):
            for p in params:
                p.grad = 0.0
            try:
                outs[i].backward()
                entry["grads"] = [grad_of(p) for p in params]
                entry["x_grads"] = [grad_of(x) for x in xs] if run["as_values"] else None
            except Exception as exc:
                entry.update(failure("backprop", exc))
        info["runs"].append(entry)
    if zero_grad:
        for p in params:
            p.grad = 1.5
        try:
            module.zero_grad()
            info["zeroed"] = [grad_of(p) for p in params]
        except Exception as exc:
            info["zero_grad_failed"] = error_text(exc)
    return info


def _flatten(items) -> list:
    out = []
    for item in items:
        if isinstance(item, (list, tuple)):
            out.extend(_flatten(item))
        else:
            out.append(item)
    return out


def op_loss(ns, value: str, function: str, cases: list[dict]) -> list:
    """loss(preds, targets[, parameters, alpha]) on leaf Values: its value, and the grads
    of the predictions and parameters after backward()."""
    Value, fn = lookup(ns, value), lookup(ns, function)
    out = []
    for case in cases:
        preds = [Value(v) for v in case["preds"]]
        params = [Value(v) for v in case.get("params") or []]
        extra = (params, case["alpha"]) if case.get("alpha") is not None else ()
        try:
            loss = fn(preds, list(case["targets"]), *extra)
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        entry = {"data": data_of(loss), "is_value": hasattr(loss, "backward")}
        if entry["is_value"]:
            try:
                loss.backward()
            except Exception as exc:
                entry.update(failure("backprop", exc))
            entry["grads"] = [grad_of(p) for p in preds]
            entry["param_grads"] = [grad_of(p) for p in params]
        out.append(entry)
    return out


def op_train(ns, value: str, function: str, runs: list[dict]) -> list:
    """The student's train(...) on models and losses made here, which depend on nothing
    else the student wrote. Each run reports train's return value, the parameters after,
    and what loss_fn saw at each call (batch sizes, whether each prediction went with its
    own sample's target, which samples were used)."""
    Value, train = lookup(ns, value), lookup(ns, function)
    out = []
    for run in runs:
        model = _model(Value, run)
        seen = {"sizes": [], "mismatched": 0, "used": set()}

        def loss_fn(preds, targets, run=run, seen=seen):
            seen["sizes"].append(len(preds))
            for s, t in zip(preds, targets):
                if run["model"] == "scale" and getattr(s, "data", None) != (t + 1) * run["p0"]:
                    seen["mismatched"] += 1
                seen["used"].add(t)
            if run["loss"] == "squared":
                terms = [(s - y) ** 2 for s, y in zip(preds, targets)]
                total = terms[0]
                for term in terms[1:]:
                    total = total + term
                return total * (1.0 / len(terms))
            if run["loss"] == "mean":
                total = preds[0]
                for q in preds[1:]:
                    total = total + q
                return total * (1.0 / len(preds))
            terms = [(1 - y * s).relu() for s, y in zip(preds, targets)]
            total = terms[0]
            for term in terms[1:]:
                total = total + term
            return total * (1.0 / len(terms))

        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                result = train(model, run["xs"], run["ys"], loss_fn, **run["kwargs"])
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        entry = {
            "returned": plain(result),
            "params": [data_of(p) for p in model.parameters()],
            "sizes": seen["sizes"][:1000],
            "mismatched": seen["mismatched"],
            "used": len(seen["used"]),
            "printed": [ln[:200] for ln in printed.getvalue().splitlines() if ln.strip()][:200],
        }
        if run["model"] == "features":
            entry["right"] = sum(
                (model(x).data > 0) == (y > 0) for x, y in zip(run["xs"], run["ys"])
            )
        out.append(entry)
    return out


def _model(Value, run: dict):
    if run["model"] == "scale":
        return _Scale(Value, run.get("p0", 0.0))
    if run["model"] == "shift":
        return _Shift(Value)
    return _Features(Value, run.get("seed", 0))


class _Scale:
    """A model with one parameter p: model(x) = p * x[0]."""

    def __init__(self, Value, p0: float) -> None:
        self.p = Value(p0)

    def __call__(self, x):
        return self.p * x[0]

    def parameters(self):
        return [self.p]

    def zero_grad(self) -> None:
        self.p.grad = 0.0


class _Shift:
    """A model with one parameter c: model(x) = c + x[0] (the visible check's)."""

    def __init__(self, Value) -> None:
        self.c = Value(0.0)

    def __call__(self, x):
        return self.c + x[0]

    def parameters(self):
        return [self.c]

    def zero_grad(self) -> None:
        self.c.grad = 0.0


class _Features:
    """A linear model on the features x0, x1 and x0*x1 (not a network): enough to
    separate points by the sign of x0*x1."""

    def __init__(self, Value, seed: int) -> None:
        import random

        r = random.Random(seed)
        self.w = [Value(r.uniform(-0.5, 0.5)) for _ in range(3)]
        self.b = Value(0.0)

    def __call__(self, x):
        return self.w[0] * x[0] + self.w[1] * x[1] + self.w[2] * (x[0] * x[1]) + self.b

    def parameters(self):
        return [*self.w, self.b]

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = 0.0


OPERATIONS.update(
    {
        "module_base": op_module_base,
        "module": op_module,
        "loss": op_loss,
        "train": op_train,
    }
)
