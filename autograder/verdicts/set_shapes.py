"""The answers' shapes of the problem sets' probe operations (see answers.py): complete,
exact keys, types and lengths, or ``Malformed``."""

from __future__ import annotations

from collections.abc import Callable

from .shapes import _need, _number, entries, failure, keys, plain, plains, text

# ---- 09_set_arrays: arrays as {"shape", "flat"} ---------------------------------------------

SA_MAX_SIZE = 10_000  # numbers in one array the probe sends (probe/set_arrays.py)


def _count(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _sa_array(x) -> None:
    """An array as the probe sends it ({"shape", "flat"}), or plain's {"repr", "type"}."""
    if isinstance(x, dict) and set(x) == {"repr", "type"}:
        return plain(x)
    keys(x, {"shape", "flat"})
    dims, flat = x["shape"], x["flat"]
    _need(isinstance(dims, list) and len(dims) <= 4 and all(map(_count, dims)), "a bad shape")
    size = 1
    for n in dims:
        size *= n
    _need(
        isinstance(flat, list) and len(flat) == size <= SA_MAX_SIZE and all(map(_number, flat)),
        "flat: not the numbers of its shape",
    )


def _sa_unbroadcast(args: dict, result) -> None:
    for entry in entries(result, len(args["cases"]), "cases"):
        if failure(entry, {"call"}):
            continue
        keys(entry, {"result", "changed"})
        _sa_array(entry["result"])
        _need(isinstance(entry["changed"], bool), "changed: not a bool")


def _sa_fits(data: dict, case: dict) -> bool:
    """Whether out's data has the shape for which the probe calls the closure."""
    if "shape" not in data:
        return False
    if case["expr"] == "a.sum()":
        return len(data["flat"]) == 1
    return data["shape"] == case["out_shape"]


def _sa_closure(args: dict, result) -> None:
    for case, entry in zip(args["cases"], entries(result, len(args["cases"]), "cases")):
        if isinstance(entry, dict) and entry.get("failed") == "call":
            failure(entry, {"call"})
            continue
        base = {"is_tensor", "data", "changed", "prev"}
        if isinstance(entry, dict) and "failed" in entry:
            failure(entry, {"backprop"}, base)
        else:
            keys(entry, base, {"a_grad", "b_grad"})
        _sa_array(entry["data"])
        for name in ("is_tensor", "changed"):
            _need(isinstance(entry[name], bool), f"{name}: not a bool")
        prev = entry["prev"]
        _need(
            isinstance(prev, list) and len(prev) == 2 and all(isinstance(p, bool) for p in prev),
            "prev: not two bools",
        )
        fits = entry["is_tensor"] and _sa_fits(entry["data"], case)
        _need(fits or "failed" not in entry, "a closure that should not have run")
        if "failed" in entry:
            continue
        _need(("a_grad" in entry) == fits and ("b_grad" in entry) == fits, "grads missing")
        if fits:
            _sa_array(entry["a_grad"])
            if case.get("b") is None:
                _need(entry["b_grad"] is None, "b_grad: for no b")
            else:
                _sa_array(entry["b_grad"])


def _sa_backward(args: dict, result) -> None:
    for graph, entry in zip(args["graphs"], entries(result, len(args["graphs"]), "graphs")):
        n_leaves = len(graph["leaves"])
        if failure(entry, {"call", "backprop"}, {"ran"}):
            _need(("ran" in entry) == (entry["failed"] == "backprop"), "ran: missing")
        else:
            keys(entry, {"grads", "ran"})
            for grad in entries(entry["grads"], n_leaves, "grads"):
                _sa_array(grad)
        ran = entry.get("ran", [])
        _need(isinstance(ran, list) and len(ran) <= 1000, "ran: not a list")
        for index in ran:
            _need(
                _count(index) and n_leaves <= index < n_leaves + len(graph["nodes"]),
                "ran: not a node made by hand",
            )


# ---- 07_set_gradients ----------------------------------------------------------------------


def _sg_softmax(args: dict, result) -> None:
    for case, entry in zip(args["cases"], entries(result, len(args["cases"]), "cases")):
        if entry.get("failed") == "call":
            failure(entry, {"call"})
            continue
        if set(entry) == {"returned"}:
            text(entry["returned"], 200)
            continue
        n = len(case["logits"])
        if "failed" in entry:
            failure(entry, {"backprop"}, {"data", "values", "grads"})
        else:
            keys(entry, {"data", "values"}, {"grads"})
        plains(entry["data"], None, "data")
        _need(isinstance(entry["values"], bool), "values: not a bool")
        complete = entry["values"] and len(entry["data"]) == n
        _need(("grads" in entry) == complete, "grads missing or unexpected")
        if complete:
            plains(entry["grads"], n, "grads")


def _sg_cross_entropy(args: dict, result) -> None:
    for case, entry in zip(args["cases"], entries(result, len(args["cases"]), "cases")):
        if entry.get("failed") == "call":
            failure(entry, {"call"})
            continue
        if "failed" in entry:
            failure(entry, {"backprop"}, {"data", "is_value", "grads"})
        else:
            keys(entry, {"data", "is_value"}, {"grads"})
        plain(entry["data"])
        _need(isinstance(entry["is_value"], bool), "is_value: not a bool")
        _need(("grads" in entry) == entry["is_value"], "grads missing or unexpected")
        if entry["is_value"]:
            rows = entry["grads"]
            _need(isinstance(rows, list) and len(rows) == len(case["logits"]), "grads: rows")
            for row, logits in zip(rows, case["logits"]):
                plains(row, len(logits), "grads")


def _sg_grad_check(args: dict, result) -> None:
    for call, entry in zip(args["calls"], entries(result, len(args["calls"]), "calls")):
        if failure(entry, {"call"}):
            continue
        keys(entry, {"result", "xs"})
        plain(entry["result"])
        plains(entry["xs"], len(call["xs"]), "xs")


def _sg_overrides(args: dict, result) -> None:
    keys(result, {"defined"}, {"class", "what", "own", "made"})
    _need(isinstance(result["defined"], bool), "defined: not a bool")
    if not result["defined"]:
        return _need(set(result) == {"defined"}, "an undefined class with details")
    _need(isinstance(result.get("class"), bool), "class: not a bool")
    if not result["class"]:
        keys(result, {"defined", "class", "what"})
        return text(result["what"], 200)
    keys(result, {"defined", "class", "own", "made"})
    own = result["own"]
    _need(
        isinstance(own, list) and all(name in args["names"] for name in own),
        "own: not names that were asked",
    )
    _need(len(set(own)) == len(own), "own: a name twice")
    keys(result["made"], set(own))
    for made in result["made"].values():
        text(made, 200)


# ---- 08_set_training ------------------------------------------------------------------------


def _st_count(x, what: str) -> None:
    _need(_count(x), f"{what}: not a count")


def _st_optimizer(args: dict, result) -> None:
    for run, entry in zip(args["runs"], entries(result, len(args["runs"]), "runs")):
        groups = run["groups"]
        if failure(entry, {"build", "call"}, {"trajectory"}):
            _need("trajectory" not in entry or entry["step"] is None, "a stray trajectory")
            if "trajectory" in entry:
                _st_trajectory(entry["trajectory"], groups)
            continue
        keys(entry, {"trajectory", "zeroed"})
        _st_trajectory(entry["trajectory"], groups)
        zeroed = entries(entry["zeroed"], len(groups), "zeroed groups")
        for group, grads in zip(groups, zeroed):
            plains(grads, len(group["data"]), "zeroed")


def _st_trajectory(trajectory, groups: list) -> None:
    for group, path in zip(groups, entries(trajectory, len(groups), "groups")):
        for row in entries(path, len(group["grads"]), "steps"):
            plains(row, len(group["data"]), "data")


def _st_fit(args: dict, result) -> None:
    for run, entry in zip(args["runs"], entries(result, len(args["runs"]), "runs")):
        if failure(entry, {"call"}):
            continue
        keys(entry, {"returned", "params", "steps", "zeroed", "loss_calls", "sizes"})
        plain(entry["returned"])
        plains(entry["params"], len(run["weights"]), "params")
        for name in ("steps", "zeroed", "loss_calls"):
            _st_count(entry[name], name)
        _need(isinstance(entry["sizes"], list) and len(entry["sizes"]) <= 5, "sizes: too long")
        for size in entry["sizes"]:
            _st_count(size, "sizes")


def _st_accuracy(args: dict, result) -> None:
    for entry in entries(result, len(args["cases"]), "cases"):
        if not failure(entry, {"call"}):
            keys(entry, {"result"})
            plain(entry["result"])


def _st_iris(args: dict, result) -> None:
    if isinstance(result, dict) and set(result) == {"recipe"}:
        return text(result["recipe"])
    if isinstance(result, dict) and result.get("failed") == "call":
        failure(result, {"call"})
        return None
    base = {"steps", "params", "same_seed", "other_seed"}
    if isinstance(result, dict) and "failed" in result:
        failure(result, {"backprop"}, base)
    else:
        keys(result, base, {"losses", "scores", "output"})
    for key in ("same_seed", "other_seed"):
        _need(result[key] in (True, False, None), f"{key}: not a yes or no")
    plain(result["steps"])
    _st_count(result["params"], "params")
    steps = result["steps"]
    within = (
        isinstance(steps, int)
        and not isinstance(steps, bool)
        and 0 < steps <= args["max_steps"]
        and result["params"] <= args["max_params"]
    )
    outcome = [k for k in ("losses", "output", "failed") if k in result]
    _need(len(outcome) == (1 if within else 0), "a recipe trained when it should not be, or not")
    _need(("losses" in result) == ("scores" in result), "losses without scores")
    if "output" in result:
        text(result["output"])
    if "losses" in result:
        plains(result["losses"], steps, "losses")
        for row in entries(result["scores"], len(args["test_xs"]), "scores"):
            plains(row, None, "scores")
        return None
    return None


SET_SHAPES: dict[str, Callable[[dict, object], None]] = {
    "sa_unbroadcast": _sa_unbroadcast,
    "sa_closure": _sa_closure,
    "sa_backward": _sa_backward,
    "sg_softmax": _sg_softmax,
    "sg_cross_entropy": _sg_cross_entropy,
    "sg_grad_check": _sg_grad_check,
    "sg_overrides": _sg_overrides,
    "st_optimizer": _st_optimizer,
    "st_fit": _st_fit,
    "st_accuracy": _st_accuracy,
    "st_iris": _st_iris,
}
