"""The questions of the checkpoint quiz on the engine (lessons 1 to 3), one function each.

Each function draws one variant of its question from ``pick`` (``coursekit.Pick``): its
numbers, its wording and the order of its options. Your variant is drawn from your
student id; practice variants from practice seeds. What decides an answer (wordings,
option sets, statements, listings) comes in two pools, ``pick.pool(graded, practice)``,
and numbers in two halves (coursekit.quiz_variant), so that no practice variant shows
what a graded one does. What a variant shows is all here. Its answer is not: the course
works that out with its own engine when it grades (and, for the practice round,
beforehand).
"""

import math

ASSIGNMENT = "04_checkpoint_engine"

# Each question's points: written here only. `python -m autograder generate` writes them
# into the quiz notebook (its test cells' nbgrader points, the headings, the totals line).
POINTS = {
    "q1": 1, "q2": 2, "q3": 2, "q4": 2, "q5": 1, "q6": 1, "q7": 1, "q8": 1, "q9": 1,
    "q10": 1, "q11": 1, "q12": 1, "q13": 2,
}  # fmt: skip

NONZERO = (-3.0, -2.5, -2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0)
NAMES = "abcdfghkmnpqrstuvwxyz"  # labels for a graph's boxes (no l, o, i or e)


def q1(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "You build a graph that ends in `L` and call `L.backward()`. Afterwards, "
                "what does `n.grad` hold, for a node `n` of that graph?",
            ),
            (
                "s2",
                "After `L.backward()`, every node `n` of the graph behind `L` has a "
                "number in `n.grad`. What does that number say?",
            ),
        ],
        [
            (
                "s3",
                "A node `n` sits somewhere in the graph behind a loss `L`. Once "
                "`L.backward()` has run, which of these does `n.grad` equal?",
            ),
        ],
    )
    options = pick.pool(
        [
            [
                ("o1", "`dn/dL`, how much `n` would change if `L` changed a little"),
                ("o2", "`dL/dn`, how much `L` changes per unit change of `n`"),
                ("o3", "the local derivative of `n` with respect to its parents"),
                ("o4", "how far `n.data` will move in the next step of gradient descent"),
            ]
        ],
        [
            [
                ("o1", "the derivative of `n` with respect to `L`, `dn/dL`"),
                ("o2", "the rate at which `L` moves when `n.data` is nudged, `dL/dn`"),
                ("o3", "the derivative of `n` with respect to its own inputs"),
                ("o4", "the step by which the next update will change `n.data`"),
            ]
        ],
    )
    return {"kind": "choice", "stem": stem, "text": text, "options": pick.shuffled(options)}


def q2(pick):
    a, b = pick.one(NONZERO), pick.one(NONZERO)
    k = pick.one([1, 2, -1])
    tail = {1: "c * c + c", 2: "c * c + 2 * c", -1: "c * c - c"}[k]
    build = f"a = Value({a!r})\nb = Value({b!r})\nc = a * b\nd = {tail}\n"
    return {
        "kind": "number",
        "code": build + "d.backward()\n",
        "asks": "a.grad",
        "text": "What is `a.grad` after this code? Its graph is drawn below. The box without "
        "a label is `c * c`: one arrow leads into its `*`, since both of its inputs are `c`.",
        "figure": {"code": build, "root": "d"},
        "values": {"a": a, "b": b, "k": k},
    }


def q3(pick):
    x, y = pick.one(NONZERO), pick.one(NONZERO)
    second = pick.one(["x * x + y", "x * y + x", "x * x * y"])
    return {
        "kind": "number",
        "code": f"x = Value({x!r})\ny = Value({y!r})\nf = x * y\nf.backward()\n"
        f"g = {second}\ng.backward()\n",
        "asks": "x.grad",
        "text": "Nothing resets a gradient between the two calls. What is `x.grad` at the end?",
        "values": {"x": x, "y": y, "second": second},
    }


# The graphs of question 4: three leaves x, y, z, then u, v, w and the output L, each
# computed from earlier boxes (so "x y z u v w L" is always one valid order).
GRAPHS = {
    "g1": ("x * y", "u + z", "v * x", "w + u"),
    "g2": ("x + y", "u * z", "u * x", "v + w"),
    "g3": ("x * z", "y + u", "v * z", "w + y"),
    "g4": ("y * z", "x + u", "v * u", "w * x"),
}
ROLES = ("x", "y", "z", "u", "v", "w", "L")


def q4(pick):
    graph = pick.pool(["g1", "g2"], ["g3", "g4"])
    names = dict(zip(ROLES, pick.several(NAMES, len(ROLES))))

    def named(expression):
        return " ".join(names.get(token, token) for token in expression.split())

    lines = [f"{names[r]} = Value({pick.one(NONZERO)!r})" for r in ROLES[:3]]
    lines += [f"{names[r]} = {named(e)}" for r, e in zip(ROLES[3:], GRAPHS[graph])]
    build = "\n".join(lines) + "\n"
    labels = [names[r] for r in ROLES]
    return {
        "kind": "order",
        "template": graph,
        "code": build,
        "figure": {"code": build, "root": names["L"]},
        "items": labels,
        "text": f"List the labels of all {len(labels)} boxes of the graph below "
        f"({', '.join(f'`{n}`' for n in sorted(labels))}) in a **topological order**, "
        "the order lesson 2's `topological_order` returns: every node after all of its "
        "parents (the nodes it was computed from). `backward()` walks that order "
        "backwards. Answer with a list of strings; any valid order counts.",
        "values": {"names": names},
    }


def q5(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "The depth-first sort in `backward()` keeps a set `visited` and skips any "
                "node that is already in it. In a graph where some node is used twice, what "
                "would go wrong without that set?",
            ),
            (
                "s2",
                "Suppose `topological_order` had no `visited` set, so that it appended a node "
                "each time it reached it. In a graph where one node feeds two others, what "
                "goes wrong?",
            ),
        ],
        [
            (
                "s3",
                "Without its `visited` set, `topological_order` appends a node every time a "
                "path reaches it. Take `c = a * b` and `d = c * c + c`: what goes wrong in "
                "`d.backward()`?",
            ),
        ],
    )
    options = pick.pool(
        [
            [
                (
                    "o1",
                    "that node would be listed twice, so its `_backward` would run twice and "
                    "its parents would get its gradient twice",
                ),
                ("o2", "nothing would go wrong: the gradients come out the same, only more slowly"),
                ("o3", "the sort would never stop, because a node used twice makes a cycle"),
                ("o4", "the leaves would be left out of the order, so they would get no gradient"),
            ]
        ],
        [
            [
                (
                    "o1",
                    "`c` is in the order more than once, so `a` and `b` receive `c`'s "
                    "gradient more than once",
                ),
                ("o2", "the same gradients come out; the sort just does some work twice"),
                ("o3", "the recursion goes on for ever: using `c` again closes a loop"),
                ("o4", "`a` and `b` drop out of the order, and their `grad` stays 0"),
            ]
        ],
    )
    return {"kind": "choice", "stem": stem, "text": text, "options": pick.shuffled(options)}


# Question 6: an operation the lessons do not have, written the lessons' way, with
# exactly one wrong line. Each listing is one variant.
MULADD = {
    "m1": [
        "def muladd(self, w, b):",
        '    """self * w + b in one node."""',
        "    out = Value(self.data * w.data + b.data, (self, w, b), 'muladd')",
        "",
        "    def _backward():",
        "        self.grad += w.data * out.grad",
        "        w.grad += w.data * out.grad",
        "        b.grad += out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "m2": [
        "def muladd(self, w, b):",
        '    """self * w + b in one node."""',
        "    out = Value(self.data * w.data + b.data, (self, w, b), 'muladd')",
        "",
        "    def _backward():",
        "        self.grad += w.data * out.grad",
        "        w.grad += self.data * out.grad",
        "        b.grad = out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "m3": [
        "def muladd(self, w, b):",
        '    """self * w + b in one node."""',
        "    out = Value(self.data * w.data + b.data, (self, w, b), 'muladd')",
        "",
        "    def _backward():",
        "        self.grad += w.data",
        "        w.grad += self.data * out.grad",
        "        b.grad += out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "m4": [
        "def muladd(self, w, b):",
        '    """self * w + b in one node."""',
        "    out = Value(self.data * w.data + b.data, (self, w), 'muladd')",
        "",
        "    def _backward():",
        "        self.grad += w.data * out.grad",
        "        w.grad += self.data * out.grad",
        "        b.grad += out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "m5": [
        "def muladd(self, w, b):",
        '    """self * w + b in one node."""',
        "    out = Value(self.data * w.data + b.data, (self, w, b), 'muladd')",
        "",
        "    def _backward():",
        "        self.grad += w.data * out.grad",
        "        w.grad += self.data * out.grad",
        "        b.grad += b.data * out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "m6": [
        "def muladd(self, w, b):",
        '    """self * w + b in one node."""',
        "    out = Value(self.data * w.data + b.data, (self, w, b), 'muladd')",
        "",
        "    def _backward():",
        "        self.grad += self.data * out.grad",
        "        w.grad += self.data * out.grad",
        "        b.grad += out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
}
MULADD_POOLS = (["m1", "m2", "m3", "m4"], ["m5", "m6"])  # graded, practice


def q6(pick):
    template = pick.pool(*MULADD_POOLS)
    return {
        "kind": "line",
        "template": template,
        "listing": MULADD[template],
        "text": "`muladd` computes `self * w + b` as one node (a neuron does this for "
        "each input). Exactly one line of it is wrong: the gradients it gives are not the "
        "derivatives of `self * w + b`. Which line? Answer with its number.",
    }


# Question 7: one-input functions the lessons do not have, each with one wrong line.
UNARY = {
    "cube": [
        "def cube(self):",
        "    x = self.data",
        "    out = Value(x**3, (self,), 'cube')",
        "",
        "    def _backward():",
        "        self.grad += 3 * out.data**2 * out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "sinh": [
        "def sinh(self):",
        "    out = Value(math.sinh(self.data), (self,), 'sinh')",
        "",
        "    def _backward():",
        "        self.grad += math.sinh(self.data) * out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "softsign": [
        "def softsign(self):",
        "    x = self.data",
        "    out = Value(x / (1 + abs(x)), (self,), 'softsign')",
        "",
        "    def _backward():",
        "        self.grad = out.grad / (1 + abs(x)) ** 2",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "square": [
        "def square(self):",
        "    out = Value(self.data**2, (), 'square')",
        "",
        "    def _backward():",
        "        self.grad += 2 * self.data * out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "cosh": [
        "def cosh(self):",
        "    out = Value(math.cosh(self.data), (self,), 'cosh')",
        "",
        "    def _backward():",
        "        self.grad += math.sinh(self.data)",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
    "exp2": [
        "def exp2(self):",
        "    out = Value(2**self.data, (self,), 'exp2')",
        "",
        "    def _backward():",
        "        self.grad += out.data * out.grad",
        "",
        "    out._backward = _backward",
        "    return out",
    ],
}
UNARY_POOLS = (["cube", "sinh", "softsign", "square"], ["cosh", "exp2"])  # graded, practice


def q7(pick):
    template = pick.pool(*UNARY_POOLS)
    return {
        "kind": "line",
        "template": template,
        "listing": UNARY[template],
        "text": f"Exactly one line of this `{template}` is wrong. Which one? Answer with its "
        "number. (`math` is imported; what the function computes is right.)",
    }


def q8(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "`_backward` must add to a parent's gradient with `+=`, not set it with "
                "`=`, because a node that is used by several operations gets a share of "
                "gradient from each of them, and all the shares must be summed.",
            ),
            (
                "s2",
                "`_backward` may just as well set a parent's gradient with `=` instead "
                "of adding to it with `+=`: each node gets its gradient from exactly one "
                "operation, so nothing is lost.",
            ),
        ],
        [
            (
                "s3",
                "With `=` instead of `+=` in every `_backward`, `(x + x).backward()` "
                "would leave `x.grad` at `1.0` instead of `2.0`.",
            ),
            (
                "s4",
                "With `=` instead of `+=` in every `_backward`, `(x * x).backward()` "
                "would still give the right `x.grad`, `2 * x.data`.",
            ),
        ],
    )
    return {"kind": "truth", "stem": stem, "text": text}


def q9(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "`backward()` could call the nodes' `_backward` closures in any order, "
                "as long as each runs exactly once: the reverse topological order only makes "
                "it faster.",
            ),
            (
                "s2",
                "`backward()` may run a node's `_backward` only once every node that uses "
                "it has run its own: before that, the node's `grad` is incomplete, and it "
                "would pass on too little.",
            ),
        ],
        [
            (
                "s3",
                "Running the `_backward` closures in topological order (every node after "
                "its parents) instead of in reverse gives the same gradients, as long as each "
                "runs once.",
            ),
            (
                "s4",
                "`backward()` sets the output's `grad` to 1 and runs the output's `_backward` "
                "first: at that moment the output is the only node whose `grad` is complete.",
            ),
        ],
    )
    return {"kind": "truth", "stem": stem, "text": text}


def q10(pick):
    x = pick.pool([0.0, 0.0, 0.0, -2.0, -0.5, 0.5, 1.5, 3.0], [-1.0, -0.25, 0.25, 1.0, 2.0])
    claim = pick.one([0.0, 1.0])
    stem, text = pick.one(
        [
            (
                "s1",
                f"After `x = Value({x!r})` and `x.relu().backward()`, `x.grad` is `{claim!r}`.",
            ),
            (
                "s2",
                f"`y = Value({x!r}).relu()` passes gradient on to its input at the rate "
                f"`{claim!r}`: after `y.backward()`, the input's `grad` is `{claim!r}`.",
            ),
        ]
    )
    if x == 0:
        text += " (At exactly 0 the engine picks a slope for relu, as PyTorch does.)"
    return {"kind": "truth", "stem": stem, "text": text, "values": {"x": x, "claim": claim}}


q10.numbers_in_pools = True  # its numbers are few: split in pools, not in halves


TANH = {z: round(math.tanh(z), 6) for z in (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0)}


def q11(pick):
    z = pick.one(sorted(TANH)) * pick.one([1, -1])
    k = pick.one([2, 4, 0.5, -2, -0.5, 1, -1, 0.25])
    c = pick.one([1, 2, -1, 3])
    x = z / k
    tail = "" if c == 1 else f" * {c}"
    return {
        "kind": "number",
        "code": f"x = Value({x!r})\ny = ({k!r} * x).tanh(){tail}\ny.backward()\n",
        "asks": "x.grad",
        "text": f"What is `x.grad`? You may use tanh({abs(z):g}) = {TANH[abs(z)]} (and "
        "tanh(-z) = -tanh(z)). Within 0.001 counts.",
        "values": {"k": k, "x": x, "c": c, "tanh": math.copysign(TANH[abs(z)], z)},
    }


def q12(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "`sigmoid(x) = 1 / (1 + e**-x)`. Its `_backward` keeps the output `s` in "
                "the closure. Which expression is the local derivative `d sigmoid(x)/dx`?",
            ),
            (
                "s2",
                "The `_backward` of `sigmoid` has the output `s = sigmoid(x)` at hand. "
                "By which expression does it multiply `out.grad`?",
            ),
        ],
        [
            (
                "s3",
                "Let `s = 1 / (1 + math.exp(-x))`. Which expression in `s` alone equals "
                "`ds/dx`, the factor `sigmoid`'s `_backward` multiplies `out.grad` by?",
            ),
        ],
    )
    options = pick.pool(
        [[("o1", "`1 - s**2`"), ("o2", "`s`"), ("o3", "`s * (1 - s)`"), ("o4", "`1 / s`")]],
        [[("o1", "`(1 - s) * (1 + s)`"), ("o2", "`s` itself"), ("o3", "`s - s**2`"),
          ("o4", "`-1 / s**2`")]],
    )  # fmt: skip
    return {"kind": "choice", "stem": stem, "text": text, "options": pick.shuffled(options)}


def q13(pick):
    a = pick.one([1.0, 2.0, 3.0, 0.5, -1.0, 1.5, -2.0, 2.5, 4.0])
    b = pick.one([0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, -2.0, 3.0])
    c = pick.one([1.0, 2.0, 0.5, 3.0])
    inner = "x" if a == 1 else f"{a:g}*x"
    if b:
        inner = f"{inner} {'+' if b > 0 else '-'} {abs(b):g}"
    power = "e**x" if inner == "x" else f"e**({inner})"
    scale = "" if c == 1 else f"{c:g} * "
    return {
        "kind": "function",
        "name": "softplus_grad",
        "calls": [(0.5,), (-2.0,)],
        "text": f"`f(x) = {scale}log(1 + {power})` is a softplus, a smooth cousin of relu. "
        "Write `softplus_grad(x)`: its derivative `df/dx` at a plain number `x`, the factor "
        "its `_backward` would multiply `out.grad` by. It is checked at many points between "
        "-8 and 8, to within a relative 1e-6.",
        "values": {"a": a, "b": b, "c": c},
    }


QUESTIONS = {name: fn for name, fn in globals().items() if name[0] == "q" and name[1:].isdigit()}
