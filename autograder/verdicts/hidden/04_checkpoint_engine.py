"""Hidden answers of the checkpoint quiz on the engine (04_checkpoint_engine).

Its questions, and what each variant shows, are in source/04_checkpoint_engine/questions.py;
here is only what makes an answer right (see quiz.py), and the worked answers the practice
round shows.
"""

from __future__ import annotations

from .common import RefValue
from .quiz import (
    Key,
    affine,
    choice,
    function,
    g,
    line,
    number,
    order,
    plus,
    practice_bank,
    run,
    sigmoid,
    squared,
    tests,
    truth,
)

ASSIGNMENT = "04_checkpoint_engine"
REFERENCE = {"Value": RefValue}


def graph_order(v) -> dict[str, set[str]]:
    """Question 4: each box after its parents, as the reference engine builds the graph."""
    namespace = run(v.code, REFERENCE)
    label = {id(x): name for name, x in namespace.items() if isinstance(x, RefValue)}
    return {
        label[id(node)]: {label[id(p)] for p in node._prev}
        for node in map(namespace.get, label.values())
    }


def why_order(v, key) -> str:
    computed = [v.names[r] for r in ("x", "y", "z", "u", "v", "w", "L")]
    needs = "; ".join(f"{b} after {', '.join(key[b])}" for b in computed if key[b])
    return (
        f"The order the code computes the boxes in is one answer: {computed}. What any "
        f"valid answer needs: {needs}. Leaves can come in any order before the boxes that "
        "use them."
    )


def why_q2(v, key) -> str:
    c = v.a * v.b
    tail = {1: "+ c", 2: "+ 2 * c", -1: "- c"}[v.k]
    return (
        f"c = a * b = {g(c)}. In d = c * c {tail}, c gets a share from each of its uses: "
        f"2c from c * c and {v.k} from '{tail}', so dd/dc = 2c {'+' if v.k > 0 else '-'} "
        f"{abs(v.k)} = {g(2 * c + v.k)}. The product a * b passes dd/dc * b = "
        f"{g(2 * c + v.k)} * {g(v.b)} = {g(key)} on to a."
    )


def why_q3(v, key) -> str:
    share = {
        "x * x + y": ("2x", 2 * v.x),
        "x * y + x": ("y + 1", v.y + 1),
        "x * x * y": ("2xy", 2 * v.x * v.y),
    }[v.second]
    return (
        f"f.backward() leaves x.grad = df/dx = y = {g(v.y)}. g.backward() then adds "
        f"dg/dx = {share[0]} = {g(share[1])} on top, because _backward adds (+=) and nothing "
        f"set x.grad back to 0: {g(v.y)} {plus(share[1])} = {g(key)}. This is why training "
        "loops zero the gradients before each backward()."
    )


def why_q11(v, key) -> str:
    times = "" if v.c == 1 else f" * {g(v.c)}"
    return (
        f"y = tanh({affine(v.k, 0)}){times}, so dy/dx = (1 - tanh({g(v.k * v.x)})**2) * {g(v.k)}"
        f"{times} = (1 - {squared(v.tanh)}) * {g(v.k)}{times} = {g(key)}: the local derivative "
        f"of tanh times that of {g(v.k)} * x (the chain rule){' and the factor' if times else ''}."
    )


def why_q13(v, key) -> str:
    scale = "" if v.c == 1 else f"{g(v.c)} * "
    return (
        f"With u = {affine(v.a, v.b)}: d log(1 + e**u)/du = e**u / (1 + e**u) = "
        f"sigmoid(u), and du/dx = {g(v.a)}, so softplus_grad(x) = {scale}{g(v.a)} * "
        f"sigmoid({affine(v.a, v.b)}) (the chain rule). For example softplus_grad(0.5) = "
        f"{g(v.c * v.a * sigmoid(0.5 * v.a + v.b))}."
    )


def _softplus_inputs(v, rng):
    return (rng.uniform(-8.0, 8.0),)


BUGGY = {  # question 6 (muladd) and question 7: the wrong line of each listing
    "m1": 7, "m2": 8, "m3": 6, "m4": 3, "m5": 8, "m6": 6,
    "cube": 6, "sinh": 5, "softsign": 6, "square": 2, "cosh": 5, "exp2": 5,
}  # fmt: skip
FIXES = {  # why that line is wrong, and how it should read
    "m1": "d(self*w + b)/dw = self, so it must be w.grad += self.data * out.grad.",
    "m2": "= overwrites what b got from its other uses; it must add: b.grad += out.grad.",
    "m3": "the chain rule multiplies by out.grad: self.grad += w.data * out.grad.",
    "m4": "b is missing from the parents (self, w, b), so backward() never reaches b.",
    "m5": "d(self*w + b)/db = 1, so it must be b.grad += out.grad.",
    "m6": "d(self*w + b)/dself = w, so it must be self.grad += w.data * out.grad.",
    "cube": "out.data is x**3; the slope is 3 * x**2: self.grad += 3 * x**2 * out.grad.",
    "sinh": "the slope of sinh is cosh: self.grad += math.cosh(self.data) * out.grad.",
    "softsign": "= overwrites the shares of other uses; it must add (+=).",
    "square": "with no parents, backward() never reaches self: the parents are (self,).",
    "cosh": "the chain rule multiplies by out.grad: ... * out.grad.",
    "exp2": "the slope of 2**x is log(2) * 2**x: self.grad += math.log(2) * out.data * out.grad.",
}


def why_line(v, key) -> str:
    return f"Line {key}: {FIXES[v.template]}"


KEYS: dict[str, Key] = {
    "q1": choice(
        "o2",
        lambda v, k: (
            f"({k}): grad holds dL/dn, how sensitive the final output L is to this "
            "node. The local derivative is only the factor a node's _backward multiplies "
            "out.grad by, and an update step is worked out from grad."
        ),
    ),
    "q2": number(REFERENCE, why_q2),
    "q3": number(REFERENCE, why_q3),
    "q4": order(graph_order, why_order),
    "q5": choice(
        "o1",
        lambda v, k: (
            f"({k}): without visited, the sort reaches the node once along each "
            "path and appends it each time. Its _backward then runs twice and passes its "
            "gradient on twice. A graph of Values has no cycles: a node is made after its "
            "parents."
        ),
    ),
    "q6": line(BUGGY, why_line),
    "q7": line(BUGGY, why_line),
    "q8": truth(
        {"s1", "s3"},
        lambda v, k: (
            f"{k}. A node used twice gets a share of gradient from each use, and "
            "+= sums them; with =, the last share overwrites the others: x + x gives "
            "x.grad = 1 instead of 2, and x * x gives x.data instead of 2 * x.data."
        ),
    ),
    "q9": truth(
        {"s2", "s4"},
        lambda v, k: (
            f"{k}. A node's _backward passes on node.grad, so it must run after "
            "every node that uses it has added its share; otherwise it passes on an "
            "incomplete gradient (often 0). The order is about correctness, not speed."
        ),
    ),
    "q10": truth(
        lambda v: (1.0 if v.x > 0 else 0.0) == v.claim,
        lambda v, k: (
            f"{k}. relu passes the gradient on where its input is > 0 (slope 1) "
            f"and blocks it elsewhere (slope 0); at exactly 0 the engine, like PyTorch, uses 0. "
            f"At x = {g(v.x)} the slope is {g(1.0 if v.x > 0 else 0.0)}."
        ),
    ),
    "q11": number(REFERENCE, why_q11),
    "q12": choice(
        "o3",
        lambda v, k: (
            f"({k}) s * (1 - s): d/dx (1 + e**-x)**-1 = e**-x / (1 + e**-x)**2 = "
            "s * (1 - s). 1 - s**2 is tanh's slope written with its output, and s would be "
            "exp's."
        ),
    ),
    "q13": function(
        lambda v: lambda x: v.c * v.a * sigmoid(v.a * x + v.b), _softplus_inputs, why_q13
    ),
}

TESTS = tests(ASSIGNMENT, "engine_quiz", KEYS)


def practice_round() -> dict:
    """The practice round kept in the quiz notebook (see quiz.practice_bank)."""
    return practice_bank(ASSIGNMENT, KEYS)
