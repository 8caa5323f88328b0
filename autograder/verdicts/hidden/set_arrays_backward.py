"""Hidden test of 09_set_arrays' ``Tensor.backward`` (exercise 6), on graphs made by hand.

The probe builds each graph from the student's ``Tensor`` but sets every node's ``_prev``
and ``_backward`` itself: a node is a weighted sum of earlier nodes (``n3 = 2*n1 - x0``),
or the weighted sum of one node's elements (a scalar output), and its closure adds
c * out.grad to each parent's grad and notes that it ran. So only backward() is graded:
the order in which it visits the nodes, that it visits each once, and how it starts.
The reference is the same graph in refgrad Values, element by element; the order the
closures ran in names what went wrong.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from . import set_arrays_ref as R
from .common import Kernel, fail, num, short


@dataclass
class Graph:
    """Leaves (arrays) and nodes: each (kind, [(parent index, coefficient), ...]), where
    indices count the leaves first; the last node is the output."""

    leaves: list[R.Arr]
    nodes: list[tuple[str, list[tuple[int, float]]]] = field(default_factory=list)

    def add(self, kind: str, *parents: tuple[int, float]) -> int:
        self.nodes.append((kind, list(parents)))
        return len(self.leaves) + len(self.nodes) - 1

    def spec(self) -> dict:
        return {
            "leaves": [leaf.spec() for leaf in self.leaves],
            "nodes": [{"kind": k, "parents": [list(p) for p in ps]} for k, ps in self.nodes],
        }

    def name(self, index: int) -> str:
        n = len(self.leaves)
        return f"x{index}" if index < n else f"n{index - n + 1}"

    def text(self) -> str:
        """The graph as formulas, or a short description when they are long."""
        lines = []
        for k, (kind, parents) in enumerate(self.nodes):
            terms = " + ".join(_term(c, self.name(i)) for i, c in parents).replace("+ -", "- ")
            body = f"({terms}).sum()" if kind == "sum" else terms
            lines.append(f"{self.name(len(self.leaves) + k)} = {body}")
        text = "; ".join(lines)
        if len(text) <= 84:
            return text
        return f"a graph of {len(self.nodes)} nodes on {len(self.leaves)} leaves, made by hand"

    def reference(self) -> list[R.Arr]:
        """Each leaf's gradient, from refgrad: d(sum of the output's elements)/d(leaf)."""
        values = [leaf.values() for leaf in self.leaves]
        for kind, parents in self.nodes:
            if kind == "sum":
                ((i, c),) = parents
                values.append(R.Arr((), [c * R.total(values[i])]))
            else:
                shape = values[parents[0][0]].shape
                flat = [
                    _weighted([(c, values[i].flat[e]) for i, c in parents])
                    for e in range(len(values[parents[0][0]].flat))
                ]
                values.append(R.Arr(shape, flat))
        R.total(values[-1]).backward()
        return [v.grads() for v in values[: len(self.leaves)]]

    def consumers(self) -> dict[int, set[int]]:
        """For each node, the nodes that use it."""
        out: dict[int, set[int]] = {}
        for k, (_, parents) in enumerate(self.nodes):
            for i, _ in parents:
                out.setdefault(i, set()).add(len(self.leaves) + k)
        return out


def _term(c: float, name: str) -> str:
    return name if c == 1 else f"-{name}" if c == -1 else f"{num(c)}*{name}"


def _weighted(terms):
    total = terms[0][0] * terms[0][1]
    for c, v in terms[1:]:
        total = total + c * v
    return total


def _shape(rng: random.Random) -> R.Shape:
    return rng.choice([(2, 3), (3, 2), (2, 2), (4,), (3,), (), (1, 3)])


def fixed_graphs(rng: random.Random) -> list[Graph]:
    """A chain, a diamond with a scalar output, a long and a short path to one node (a
    breadth-first walk gets it wrong), and two leaves each used several times."""
    graphs = []
    g = Graph([R.draw(rng, _shape(rng))])
    g.add("lin", (g.add("lin", (0, 2.0)), -1.5))
    graphs.append(g)
    g = Graph([R.draw(rng, _shape(rng))])
    a, b = g.add("lin", (0, 1.5)), g.add("lin", (0, -2.0))
    g.add("sum", (g.add("lin", (a, 1.0), (b, 0.5)), 1.0))
    graphs.append(g)
    g = Graph([R.draw(rng, _shape(rng))])
    m = g.add("lin", (0, 1.5))
    p = g.add("lin", (m, 2.0))
    q = g.add("lin", (p, -1.0))
    g.add("lin", (m, 1.0), (q, 1.0))
    graphs.append(g)
    shape = _shape(rng)
    g = Graph([R.draw(rng, shape), R.draw(rng, shape)])
    a = g.add("lin", (0, 1.0), (1, 1.0))
    b = g.add("lin", (0, 3.0), (1, -1.0))
    g.add("sum", (g.add("lin", (a, 0.5), (b, 2.0), (0, 1.0)), -2.0))
    graphs.append(g)
    return graphs


def random_graph(rng: random.Random) -> Graph:
    """2 or 3 leaves of one shape, 5 to 9 weighted sums of earlier nodes, then an output
    that uses every node nothing else uses (so every node counts), maybe summed."""
    shape = _shape(rng)
    g = Graph([R.draw(rng, shape) for _ in range(rng.randint(2, 3))])
    for _ in range(rng.randint(5, 9)):
        n = len(g.leaves) + len(g.nodes)
        picks = {n - 1 if rng.random() < 0.6 else rng.randrange(n)}
        picks |= {rng.randrange(n) for _ in range(rng.randint(0, 2))}
        g.add("lin", *((i, _coef(rng)) for i in sorted(picks)))
    used = {i for _, parents in g.nodes for i, _ in parents}
    n = len(g.leaves) + len(g.nodes)
    last = [i for i in range(len(g.leaves), n) if i not in used]
    out = g.add("lin", *((i, _coef(rng)) for i in last))
    if rng.random() < 0.5:
        g.add("sum", (out, _coef(rng)))
    return g


def _coef(rng: random.Random) -> float:
    return rng.choice((-1, 1)) * rng.choice((0.5, 1.0, 1.5, 2.0, 3.0))


def backward(kernel: Kernel) -> None:
    """backward() on hand-made graphs: every leaf's grad, and how the closures ran."""
    rng = kernel.rng
    graphs = fixed_graphs(rng) + [random_graph(rng) for _ in range(4)]
    results = kernel.run(
        "sa_backward", tensor="Tensor", graphs=[g.spec() for g in graphs], what="Tensor.backward"
    )
    for graph, got in zip(graphs, results):
        _check(graph, got)


def _check(graph: Graph, got: dict) -> None:
    where = f"in {graph.text()}"
    if "failed" in got:
        if got["type"] == "NotImplementedError":
            fail("`Tensor.backward` raised NotImplementedError (not written yet)")
        fail(
            "`Tensor.backward` should set the grad of every node,\n"
            f"got {short(got['error'], 84)}\n{where}" + _raised_hint(got)
        )
    for k, (want, grad) in enumerate(zip(graph.reference(), got["grads"])):
        if "shape" not in grad or tuple(grad["shape"]) != want.shape:
            fail(
                f"`Tensor.backward`: x{k}.grad should keep x{k}'s shape "
                f"{R.shape_text(want.shape)}, got {R.got_text(grad)}\n"
                f"{R.expected_got(want, grad)}\n{where}" + _hint(graph, got["ran"], grad)
            )
        if not R.same(grad, want):
            at, w, g = R.first_difference(grad, want)
            fail(
                f"`Tensor.backward`: x{k}.grad{at} should be {num(w)}, got {num(g)}\n"
                f"{R.expected_got(want, grad)}\n{where}" + _hint(graph, got["ran"], grad)
            )


def _raised_hint(got: dict) -> str:
    if got["type"] == "RecursionError":
        return "\n(a node is visited again and again: keep a set of the nodes seen)"
    if got["type"] == "AttributeError" and "_prev" not in got["error"]:
        return "\n(backward() uses only each node's _prev, _backward and grad)"
    return (
        "\n(put the nodes in topological order through _prev, set self.grad to ones,\n"
        "then call each node's _backward(), the output's first)"
    )


def _hint(graph: Graph, ran: list[int], grad: dict) -> str:
    """What the order the closures ran in says about backward()."""
    n_leaves = len(graph.leaves)
    nodes = range(n_leaves, n_leaves + len(graph.nodes))
    times = {i: ran.count(i) for i in nodes}
    twice = [i for i in nodes if times[i] > 1]
    if twice:
        i = twice[0]
        return (
            f"\n(the closure of {graph.name(i)} ran {times[i]} times: visit each node once, "
            "keeping a set of the nodes seen)"
        )
    never = [i for i in nodes if times[i] == 0]
    if len(never) == len(graph.nodes):
        return "\n(no closure ran: call each node's _backward(), the output's first)"
    if never:
        return (
            f"\n(the closure of {graph.name(never[0])} never ran: visit every node that "
            "the output reaches through _prev)"
        )
    position = {i: ran.index(i) for i in nodes}
    for i, users in sorted(graph.consumers().items()):
        early = [u for u in sorted(users) if i in position and position[u] > position[i]]
        if early:
            return (
                f"\n({graph.name(i)}'s closure ran before that of {graph.name(early[0])}, "
                f"which uses {graph.name(i)}:\nrun them in reverse topological order)"
            )
    if "flat" in grad and not any(grad["flat"]):
        return "\n(backward() should start with self.grad = ones of self's shape)"
    return "\n(the output's grad should start as ones: d(out)/d(out) = 1)"
