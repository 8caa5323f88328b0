"""The hidden test of 01_value that is not in its notebook: ``backprop_by_hand``, whose
test builds the lesson's neuron in the kernel from nodes that have only ``.data`` and
``.grad`` (so the student's chain rule can lean on nothing else) and compares every
``.grad`` with the reference engine.

The other tests of lesson 1 (``+``/``*``, the arithmetic, the reflected operations) are
written in the hidden regions of source/01_value/value.ipynb, with the library checks of
checks.py (``check_method``)."""

from __future__ import annotations

from .common import Kernel, RefValue, close, fail, num

# ---- backprop by hand ---------------------------------------------------------------------

NODES = ("L", "n", "s", "b", "x1w1", "x2w2", "x1", "w1", "x2", "w2")


def neuron_data(x1, w1, x2, w2, b) -> tuple[dict[str, float], dict[str, float]]:
    """The lesson's small neuron L = (x1*w1 + x2*w2 + b)**2: every node's data, and the
    true dL/d(node) from the reference engine."""
    v = {name: RefValue(x) for name, x in zip(("x1", "w1", "x2", "w2", "b"), (x1, w1, x2, w2, b))}
    v["x1w1"] = v["x1"] * v["w1"]
    v["x2w2"] = v["x2"] * v["w2"]
    v["s"] = v["x1w1"] + v["x2w2"]
    v["n"] = v["s"] + v["b"]
    v["L"] = v["n"] * v["n"]
    data = {name: node.data for name, node in v.items()}
    v["L"].backward()
    return data, {name: node.grad for name, node in v.items()}


def hand_backprop(kernel: Kernel) -> None:
    """The student's hand-written chain rule, on the grader's nodes at random inputs."""
    points = [(2.0, -3.0, 0.0, 1.0, 6.5)]
    points += [tuple(round(kernel.rng.uniform(-3, 3), 2) for _ in range(5)) for _ in range(25)]
    graphs = [neuron_data(*p) for p in points]
    results = kernel.run(
        "hand",
        function="backprop_by_hand",
        graphs=[data for data, _ in graphs],
        what="backprop_by_hand",
    )
    for point, (_, truth), got in zip(points, graphs, results):
        where = "at x1={}, w1={}, x2={}, w2={}, b={}".format(*map(num, point))
        if "failed" in got:
            error = got["error"]
            hint = ""
            if any(word in error for word in ("backward", "_prev", "label")):
                hint = (
                    "\n(set each .grad yourself from the nodes' .data and .grad: the "
                    "grader's nodes have nothing else)"
                )
            fail(f"backprop_by_hand raised {error} {where}{hint}")
        for name in NODES:
            if not close(got[name], truth[name]):
                fail(
                    f"backprop_by_hand: {name}.grad should be dL/d{name} = "
                    f"{num(truth[name])}, got {num(got[name])}\n{where}\n"
                    "(use the other nodes' .data and .grad, not numbers worked out once)"
                )


TESTS = {"value_test_hand_backprop": hand_backprop}
